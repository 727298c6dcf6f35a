/**
 * Which loops repeat a call in one process (scanShared.ts `repetition`): a loop that forks or
 * spawns a process each time round runs the child's code once per process, however many rounds
 * it makes. The child's code is the branch of an `if` on `fork()`'s result that the child takes
 * (`if (fork() == 0) { … }`, `pid = os.fork()` … `if pid == 0:`, the `else` of `if (pid > 0)`), or
 * what a process is started with (`mp.Process(target=lambda: f(r))`, `mp.spawn(…)`). A loop inside
 * that code repeats it; a loop around it does not. Read from the tree around one call, for C/C++
 * and Python alike. No `vscode` import.
 */
import type { Node } from 'web-tree-sitter';

/** Python callables whose arguments run in another process. */
const PROCESS_STARTERS = new Set(['Process', 'spawn', 'start_processes', 'Popen']);

/** Which branch of an `if` on `fork()`'s result the child takes, from the condition's text (`before`: the code before the `if`). */
function childBranch(condition: string, before: string): 'then' | 'else' | undefined {
  // fork()'s result as `F`: the call itself, or a variable assigned it before the `if` (`pid = fork()`).
  let x = condition.replace(/(?<![A-Za-z0-9_])(?:os\s*\.\s*)?v?fork\s*\(\s*\)/g, ' F ');
  const v = /^[\s(!]*(?:not\s+)?([A-Za-z_][A-Za-z0-9_]*)/.exec(x)?.[1];
  if (v && v !== 'F' && new RegExp(`(?<![A-Za-z0-9_.])${v}\\s*=\\s*(?:os\\s*\\.\\s*)?v?fork\\s*\\(\\s*\\)`).test(before))
    x = x.replace(new RegExp(`(?<![A-Za-z0-9_.])${v}(?![A-Za-z0-9_])`, 'g'), ' F ');
  x = x
    .replace(/not\s/g, '!')
    .replace(/\s+/g, '')
    .replace(/\([A-Za-z_][A-Za-z0-9_]*=F\)/g, 'F');
  while (/^\(.*\)$/.test(x)) x = x.slice(1, -1);
  if (/^(?:F==0|0==F|!F)$/.test(x)) return 'then';
  if (/^(?:F!=0|0!=F|F>0|0<F|F)$/.test(x)) return 'else';
  return undefined;
}

const within = (n: Node, outer: Node | null): boolean => outer !== null && outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;

/**
 * Where the process that runs `node` begins, when the code forks or spawns it: the start of the
 * innermost child branch or process argument around `node` (loops that begin before it do not
 * repeat `node` in one process), or -1 when none.
 */
export function processStart(node: Node, text: string): number {
  for (let n: Node | null = node.parent, child: Node = node; n; child = n, n = n.parent) {
    if (n.type === 'if_statement') {
      const condition = n.childForFieldName('condition');
      const consequence = n.childForFieldName('consequence');
      const alternative = n.childForFieldName('alternative');
      const inThen = within(child, consequence);
      const inElse = !inThen && within(child, alternative);
      if (!condition || (!inThen && !inElse)) continue;
      const branch = childBranch(condition.text, text.slice(Math.max(0, n.startIndex - 4000), n.startIndex));
      if ((branch === 'then' && inThen) || (branch === 'else' && inElse)) return (inThen ? consequence : alternative)!.startIndex;
    } else if (n.type === 'call' && child.type === 'argument_list') {
      const fn = n.childForFieldName('function')?.text ?? '';
      const last = /([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(fn)?.[1];
      if (last && PROCESS_STARTERS.has(last)) return child.startIndex;
    }
  }
  return -1;
}
