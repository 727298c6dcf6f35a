/**
 * What `commcost measure` says last, on stderr: what to do next with the run just made — open its
 * report (the path, or the exact command that writes it), see its figures in the editor (install
 * the VS Code extension), and measure a GPU host (the exact command). Pure: facts in, lines out;
 * every path is made terminal-safe here.
 */
import { basename, isAbsolute, relative } from 'node:path';
import { terminalSafe } from './terminalText';

/** The facts the next steps are chosen by. */
export interface NextStepFacts {
  /** How the user runs the CLI: "commcost", or "node bin/commcost.js" ({@link cliInvocation}). */
  cli: string;
  /** The saved run files, in measuring order (none when every save failed). */
  saved: readonly string[];
  /** The HTML report written by --html, when it was. */
  html?: string;
  /** Whether every run made was on the simulated NCCL (none measured a GPU). */
  simulated: boolean;
  /** The package version, for the .vsix file name `npm run package` makes. */
  version: string;
}

/**
 * How the CLI was started, as the user would type it again: "commcost" when run through its
 * installed command, "node bin/commcost.js" (relative to `cwd`) when run as a script by path, as
 * `npm start` does.
 * @param script process.argv[1]
 */
export function cliInvocation(script: string | undefined, cwd: string): string {
  if (!script || basename(script) !== 'commcost.js') return 'commcost';
  const rel = isAbsolute(script) ? relative(cwd, script) : script;
  return `node ${rel.startsWith('..') ? script : rel}`;
}

/** A path quoted for a POSIX shell when it holds anything but safe characters. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The closing lines: "next:", then the report (its path when --html wrote it; else the command that
 * writes it next to the saved run, and where), the extension (the .vsix `npm run package` makes, and
 * that it reads `.commcost/runs/`), and the GPU host to measure — "measure a GPU host" after a
 * simulated run (its figures are not measurements), "measure another host" after a measured one —
 * with the exact command. Empty when nothing was saved or written (there is nothing to open).
 */
export function nextStepLines(f: NextStepFacts): string[] {
  const out: string[] = [];
  const last = f.saved[f.saved.length - 1];
  if (f.html !== undefined) out.push(`  open the report:   ${terminalSafe(f.html)}`);
  else if (last !== undefined) {
    const files = f.saved.map((p) => shellWord(terminalSafe(p))).join(' ');
    const page = f.saved.length > 1 ? `${last.replace(/\.jsonl?$/i, '')}.compare.html` : `${last.replace(/\.jsonl?$/i, '')}.html`;
    out.push(`  open the report:   ${f.cli} report ${files} --html   (writes ${terminalSafe(page)})`);
  }
  if (out.length === 0) return [];
  out.push(
    `  see it in your code: install the VS Code extension (npm run package && code --install-extension commcost-${terminalSafe(f.version)}.vsix); it reads .commcost/runs/`,
    f.simulated
      ? `  measure a GPU host: ${f.cli} measure --host user@gpu-host   (an ~/.ssh/config alias works too; these figures were simulated)`
      : `  measure another host: ${f.cli} measure --host user@gpu-host   (an ~/.ssh/config alias works too)`,
  );
  return ['', 'next:', ...out];
}
