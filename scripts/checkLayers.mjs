// The house's import rules, checked from the code's own imports (ARCHITECTURE.md "Rooms and rules").
// Run by `npm test` before anything else; `node scripts/checkLayers.mjs [root]` prints every broken
// rule (file, line, the import, the rule) and exits 1, or prints a one-line summary and exits 0.
//
// What is read: every relative import, `export … from`, `import()` and `require()` of each .ts file
// in the product's rooms, and every bare one (a package or a `node:` module). Type-only imports
// (`import type`, `export type`) count for circles and for which room may know which, never as
// loading a module at run time.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The rooms, lowest first, and the rooms each may import from (itself always). */
export const ROOMS = {
  protocol: [],
  sites: ['protocol'],
  readings: ['protocol', 'sites'],
  // native/index.js: the addon's typed face (the only way into native code).
  'remote-agent': ['protocol', 'native'],
  client: ['protocol', 'sites', 'readings'],
  cli: ['protocol', 'sites', 'readings', 'client'],
  extension: ['protocol', 'sites', 'readings', 'client'],
  webview: ['protocol', 'readings'],
};

/** Packages and Node modules a room may load at run time (type-only imports aside); undefined: any. */
const BARE = {
  protocol: [],
  // Pure source analysis: path arithmetic and the tree-sitter parser, nothing that reads or runs.
  sites: ['node:path', 'web-tree-sitter'],
  // Importable by the webview bundle: nothing Node-only, no vscode, no library.
  readings: [],
  webview: ['chart.js', '@vscode-elements/elements', /^@vscode-elements\/elements\//, /^chart\.js\//],
};

/** Rooms whose whole run-time closure (following imports into other rooms) must stay free of Node-only modules. */
const BROWSER_SAFE = ['readings', 'webview'];

/** Product files larger than this many lines are reported (ARCHITECTURE.md: split by concern). */
export const MAX_LINES = 520;

const IMPORT_RE =
  /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?(['"])([^'"]+)\3|import\(\s*(['"])([^'"]+)\5\s*\)|require\(\s*(['"])([^'"]+)\7\s*\)/gm;

/**
 * The imports of one file.
 * @returns one entry per import: the specifier, whether it is type-only, and its 1-based line
 */
export function importsOf(text) {
  const out = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    const spec = m[4] ?? m[6] ?? m[8];
    const typeOnly = m[2] !== undefined;
    const line = text.slice(0, m.index).split('\n').length;
    out.push({ spec, typeOnly, line });
  }
  return out;
}

function walk(dir, out) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules') continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
}

const roomOf = (rel) => rel.split('/')[0];
const allowedBare = (room, spec) => {
  const list = BARE[room];
  if (list === undefined) return true;
  return list.some((a) => (typeof a === 'string' ? a === spec : a.test(spec)));
};

function resolveRel(root, fromRel, spec) {
  const p = posix.normalize(posix.join(posix.dirname(fromRel), spec));
  for (const c of [p, `${p}.ts`, p.replace(/\.js$/, '.ts'), `${p}/index.ts`]) {
    const abs = join(root, ...c.split('/'));
    if (existsSync(abs) && statSync(abs).isFile()) return c;
  }
  return undefined;
}

/**
 * Checks the import rules under `root`.
 * @returns the broken rules, each `{ file, line, rule }` (empty when the house is in order), and the
 *   numbers checked
 */
export function checkLayers(root) {
  const files = [];
  for (const room of Object.keys(ROOMS)) walk(join(root, room), files);
  const rels = files.map((f) => relative(root, f).split(sep).join('/'));
  const graph = new Map(); // file -> [{ to, typeOnly }]
  const bare = new Map(); // file -> [{ spec, typeOnly, line }]
  const problems = [];
  for (const rel of rels) {
    const text = readFileSync(join(root, rel), 'utf8');
    const lines = text.split('\n').length;
    if (lines > MAX_LINES) problems.push({ file: rel, line: 1, rule: `${lines} lines: split it by concern (at most ${MAX_LINES})` });
    const room = roomOf(rel);
    const edges = [];
    const bares = [];
    for (const imp of importsOf(text)) {
      if (!imp.spec.startsWith('.')) {
        bares.push(imp);
        if (!imp.typeOnly && !allowedBare(room, imp.spec))
          problems.push({ file: rel, line: imp.line, rule: `${room}/ may not load '${imp.spec}' (${room === 'readings' ? 'readings are pure and run in the webview too' : room === 'sites' ? 'sites are pure: no vscode, no I/O' : `not among ${room}/'s libraries`})` });
        continue;
      }
      const to = resolveRel(root, rel, imp.spec);
      if (!to) continue;
      edges.push({ to, typeOnly: imp.typeOnly, line: imp.line });
      const target = roomOf(to);
      if (target !== room && !ROOMS[room].includes(target))
        problems.push({ file: rel, line: imp.line, rule: `${room}/ may not import ${target}/ ('${imp.spec}'): ${room}/ stands on ${ROOMS[room].length ? ROOMS[room].map((r) => `${r}/`).join(', ') : 'nothing outside itself'}` });
    }
    graph.set(rel, edges);
    bare.set(rel, bares);
  }
  // Browser-safe rooms: nothing they load at run time, followed into other rooms, is Node-only.
  for (const rel of rels.filter((r) => BROWSER_SAFE.includes(roomOf(r)))) {
    const seen = new Set([rel]);
    const queue = [[rel, [rel]]];
    while (queue.length) {
      const [f, path] = queue.shift();
      for (const b of bare.get(f) ?? []) {
        if (b.typeOnly || allowedBare(roomOf(rel), b.spec)) continue;
        if (f !== rel) problems.push({ file: rel, line: 1, rule: `loads '${b.spec}' at run time through ${path.slice(1).join(' → ')}: ${roomOf(rel)}/ must stay importable by the webview bundle` });
      }
      for (const e of graph.get(f) ?? []) {
        if (e.typeOnly || seen.has(e.to)) continue;
        seen.add(e.to);
        queue.push([e.to, [...path, e.to]]);
      }
    }
  }
  // No circle: strongly connected components of the whole graph (type-only imports included).
  let index = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set();
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!graph.has(to)) continue;
      if (!idx.has(to)) {
        strong(to);
        low.set(v, Math.min(low.get(v), low.get(to)));
      } else if (on.has(to)) low.set(v, Math.min(low.get(v), idx.get(to)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) problems.push({ file: c.sort()[0], line: 1, rule: `import circle: ${c.sort().join(' ↔ ')}: move the shared type down into a module of its own` });
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return { problems, files: rels.length, imports: [...graph.values()].reduce((n, e) => n + e.length, 0) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const { problems, files, imports } = checkLayers(root);
  if (problems.length > 0) {
    for (const p of problems) console.error(`${p.file}:${p.line}: ${p.rule}`);
    console.error(`checkLayers: ${problems.length} broken rule${problems.length === 1 ? '' : 's'} (ARCHITECTURE.md "Rooms and rules")`);
    process.exit(1);
  }
  console.log(`checkLayers: ${files} files, ${imports} imports between them, no broken rule, no circle`);
}
