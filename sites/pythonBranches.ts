/**
 * Names a module binds one way under `if COND:` and another under its `else:` — the usual guard
 * for an optional library (`if nccl.available: from cupy.cuda.nccl import NcclCommunicator as C`
 * / `else: class _Mock: …; C = _Mock`). A call of such a name inside the `else:` of a module-level
 * `if` with the same condition runs the stand-in, never the import: it is no lifecycle call. Read
 * from the text alone (module-level `if`/`else` at column 0); pure, no `vscode` import.
 */

const IMPORTED = /^[ \t]+(?:from[ \t]+\S+[ \t]+)?import[ \t]+(.+)$/gm;
const REBOUND = /^[ \t]+(?:class[ \t]+([A-Za-z_]\w*)|def[ \t]+([A-Za-z_]\w*)|([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=))/gm;

interface Branches {
  cond: string;
  /** [start, end) of the `if` block and of its `else:` block, as indices into the text. */
  ifBlock: { start: number; end: number };
  elseBlock: { start: number; end: number };
}

/** The module-level `if COND:` … `else:` … pairs of `text` (no `elif`), in order. */
function moduleBranches(text: string): Branches[] {
  const out: Branches[] = [];
  const lines = text.split('\n');
  const starts: number[] = [];
  let at = 0;
  for (const l of lines) {
    starts.push(at);
    at += l.length + 1;
  }
  starts.push(at);
  /** The end (line index) of the block opened on line `i`: the next column-0 line that is not blank or a comment. */
  const blockEnd = (i: number): number => {
    let j = i + 1;
    while (j < lines.length && (/^\s*(#.*)?$/.test(lines[j]!) || /^[ \t]/.test(lines[j]!))) j++;
    return j;
  };
  for (let i = 0; i < lines.length; i++) {
    const cond = /^if[ \t]+(.+?)[ \t]*:[ \t]*(?:#.*)?$/.exec(lines[i]!)?.[1];
    if (!cond) continue;
    const e = blockEnd(i);
    if (e >= lines.length || !/^else[ \t]*:[ \t]*(?:#.*)?$/.test(lines[e]!)) continue;
    const end = blockEnd(e);
    out.push({
      cond: cond.replace(/\s+/g, ''),
      ifBlock: { start: starts[i]!, end: starts[e]! },
      elseBlock: { start: starts[e]!, end: starts[end]! },
    });
    i = end - 1;
  }
  return out;
}

/**
 * A test of whether the call of `name` at index `at` of `text` runs an `else:` stand-in of a name
 * imported under the same condition (see the file's header); undefined when the file has no such name.
 */
export function elseStandIns(text: string): ((name: string, at: number) => boolean) | undefined {
  if (!/^else[ \t]*:/m.test(text)) return undefined;
  const branches = moduleBranches(text);
  const standIns = new Map<string, Set<string>>();
  for (const b of branches) {
    const imported = new Set<string>();
    const ifText = text.slice(b.ifBlock.start, b.ifBlock.end);
    for (const m of ifText.matchAll(IMPORTED))
      for (const part of (m[1] ?? '').replace(/[()#].*$/, '').split(','))
        imported.add(/(?:^|\s)as\s+([A-Za-z_]\w*)\s*$/.exec(part)?.[1] ?? part.trim().split('.')[0]!);
    const elseText = text.slice(b.elseBlock.start, b.elseBlock.end);
    for (const m of elseText.matchAll(REBOUND)) {
      const n = m[1] ?? m[2] ?? m[3];
      if (n && imported.has(n)) {
        let s = standIns.get(b.cond);
        if (!s) standIns.set(b.cond, (s = new Set()));
        s.add(n);
      }
    }
  }
  if (standIns.size === 0) return undefined;
  return (name, at) =>
    branches.some((b) => standIns.get(b.cond)?.has(name) === true && at >= b.elseBlock.start && at < b.elseBlock.end);
}
