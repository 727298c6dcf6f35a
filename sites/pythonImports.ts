/**
 * What a Python file's imports bind (pythonSites.ts resolves callees through them), the facts the
 * quick fixes need from them, and a call's arguments as the backend and eager rules read them.
 * No `vscode` import.
 */
import type { Node } from 'web-tree-sitter';
import type { FileFacts } from './callSiteTypes';
import { DIST, type ArgumentText } from './pythonNames';

/** Local name → every fully qualified name it is imported as (in order); the last one also in `last`. */
export interface Bindings {
  all: Map<string, string[]>;
  last: Map<string, string>;
  star: boolean;
  lastTopLevelImportLine: number;
}

export function pythonBindings(imports: readonly Node[]): Bindings {
  const all = new Map<string, string[]>();
  const last = new Map<string, string>();
  const bind = (local: string, full: string): void => {
    const list = all.get(local) ?? [];
    if (!list.includes(full)) list.push(full);
    all.set(local, list);
    last.set(local, full);
  };
  let star = false;
  let lastTopLevelImportLine = -1;
  for (const imp of imports) {
    if (imp.startPosition.column === 0) lastTopLevelImportLine = Math.max(lastTopLevelImportLine, imp.endPosition.row);
    if (imp.type === 'import_statement') {
      for (const n of imp.namedChildren) {
        if (!n) continue;
        if (n.type === 'dotted_name') {
          const first = n.text.split('.')[0] ?? n.text;
          bind(first, first);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bind(alias, name.replace(/\s+/g, ''));
        }
      }
    } else {
      const moduleNode = imp.childForFieldName('module_name');
      const module = moduleNode?.text.replace(/\s+/g, '');
      if (!moduleNode || !module || module.startsWith('.')) continue;
      for (const n of imp.namedChildren) {
        if (!n || n.startIndex === moduleNode.startIndex) continue;
        if (n.type === 'wildcard_import') {
          if (module === DIST || module === `${DIST}.distributed_c10d` || module === `${DIST}.device_mesh`) star = true;
        } else if (n.type === 'dotted_name') {
          bind(n.text, `${module}.${n.text}`);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bind(alias, `${module}.${name}`);
        }
      }
    }
  }
  return { all, last, star, lastTopLevelImportLine };
}

export function pythonFacts(bindings: ReadonlyMap<string, string>, lastImportLine: number): FileFacts {
  let torchName: string | undefined;
  let distName: string | undefined;
  for (const [local, full] of bindings) {
    if (full === 'torch' && !torchName) torchName = local;
    if (full === DIST && !distName) distName = local;
  }
  if (!distName && torchName) distName = `${torchName}.distributed`;
  return { ...(torchName ? { torchName } : {}), ...(distName ? { distName } : {}), importInsertLine: lastImportLine + 1 };
}

/** The arguments of a call as the backend rule and the eager facts read them. */
export function argumentsOf(args: Node): ArgumentText[] {
  const out: ArgumentText[] = [];
  if (args.type !== 'argument_list') return out;
  for (const a of args.namedChildren) {
    if (!a || a.type === 'comment') continue;
    if (a.type === 'keyword_argument') {
      const v = a.childForFieldName('value');
      out.push({ keyword: a.childForFieldName('name')?.text ?? '', type: v?.type ?? '', text: v?.text ?? '' });
    } else out.push({ type: a.type, text: a.type === 'dictionary_splat' || a.type === 'list_splat' ? `*${a.text}` : a.text });
  }
  return out;
}
