// The wrapper index's incremental derivation (sites/wrapperDerive.ts WrapperDerivation `update`,
// driven by sites/wrapperIndex.ts): random edits of a synthetic workspace (lifecycle calls put in and
// taken out, calls of functions of this file, of imported ones (also under another name), through a
// module, of constructors and methods, with backend="gloo", returned; functions renamed; a class's
// base changed; files that hold no lifecycle name of their own, so dormant until a wrapper wakes
// them), each followed by the index's answers compared with those of an index built from scratch
// on the same texts: its wrappers with their chains, and every file's sites. The same check run with
// a deliberately broken update (callers of a changed def not re-derived) must find a difference.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallSiteFinder } from '../../sites/callSites';
import { WrapperDerivation } from '../../sites/wrapperDerive';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { loadFinder } from '../support/annotationFixtures';
import { prng } from '../support/prng';

const PACKAGES = 2;
const MODULES = 5;
/** Modules no other one imports: when dormant, only the wake test (prefilter.ts) parses them. */
const LEAVES = 2;
const FUNCTIONS = 3;
const ROOT = '/ws';

/** A statement of a def's body, as written. */
type Stmt = string;
interface Module {
  p: number;
  i: number;
  leaf?: true;
  /** Renamed functions are written `f{k}_r` (their callers still write `f{k}`). */
  renamed: boolean[];
  functions: Stmt[][];
  init: Stmt[];
  method: Stmt[];
  /** The base of class C (`C{i}` of this module's previous one, imported), or none. */
  base: boolean;
}


const pathOf = (m: { p: number; i: number; leaf?: true }): string => `${ROOT}/pkg${m.p}/${m.leaf ? 'leaf' : 'mod'}${m.i}.py`;

/** A random statement for a def of module `m` (`inMethod`: `self.m(…)` may be written). */
function statement(rnd: () => number, m: Module, inMethod: boolean): Stmt {
  const pick = (n: number): number => Math.floor(rnd() * n);
  const p = pick(PACKAGES);
  const i = pick(MODULES);
  const k = pick(FUNCTIONS);
  const kinds = [
    'g = dist.new_group(ranks)',
    'dist.init_process_group(backend="nccl")',
    'dist.destroy_process_group()',
    'dist.all_reduce(ranks)',
    `f${k}(ranks)`,
    `return f${k}(ranks)`,
    `f${k}(ranks, backend="gloo")`,
    `IMPORT ${p} ${i} f${k}`,
    `ALIAS ${p} ${i} f${k}`,
    `MODULE ${p} ${i} f${k}`,
    `c = C${m.i}(ranks)`,
    `CTOR ${p} ${i}`,
    ...(inMethod ? ['self.m(ranks)'] : []),
  ];
  return kinds[pick(kinds.length)]!;
}

/** The module's text: its imports follow from its statements; `dist` is imported only where a lifecycle call is written. */
function render(m: Module): string {
  const imports = new Set<string>();
  const line = (s: Stmt): string => {
    const [kind, p, i, name] = s.split(' ');
    const other = `pkg${p}.mod${i}`;
    if (kind === 'IMPORT') {
      imports.add(`from ${other} import ${name}`);
      return `${name}(ranks)`;
    }
    if (kind === 'ALIAS') {
      imports.add(`from ${other} import ${name} as ${name}_p${p}m${i}`);
      return `${name}_p${p}m${i}(ranks)`;
    }
    if (kind === 'MODULE') {
      imports.add(`import ${other} as m_p${p}m${i}`);
      return `m_p${p}m${i}.${name}(ranks)`;
    }
    if (kind === 'CTOR') {
      imports.add(`import ${other} as m_p${p}m${i}`);
      return `k = m_p${p}m${i}.C${i}(ranks)\n        k.m(ranks)`;
    }
    if (s.includes('dist.')) imports.add('import torch.distributed as dist');
    return s;
  };
  const body = (stmts: Stmt[], indent: string): string =>
    stmts.length === 0 ? `${indent}pass` : stmts.map((s) => `${indent}${line(s).replace(/\n {8}/g, `\n${indent}`)}`).join('\n');
  const parts: string[] = [];
  m.functions.forEach((stmts, k) => parts.push(`def f${k}${m.renamed[k] ? '_r' : ''}(ranks, backend=None):\n${body(stmts, '    ')}\n`));
  const base = m.base && m.i > 0 ? `C${m.i - 1}` : undefined;
  if (base) imports.add(`from pkg${m.p}.mod${m.i - 1} import ${base}`);
  parts.push(
    `class C${m.i}${base ? `(${base})` : ''}:\n    def __init__(self, ranks):\n${body(m.init, '        ')}\n\n    def m(self, ranks):\n${body(m.method, '        ')}\n`,
  );
  return `${[...imports].sort().join('\n')}\n\n\n${parts.join('\n\n')}`;
}

/** A random workspace: about half its bodies make a lifecycle call or call another def. */
function workspace(rnd: () => number): Module[] {
  const out: Module[] = [];
  for (let p = 0; p < PACKAGES; p++)
    for (let i = 0; i < MODULES + LEAVES; i++) {
      const m: Module = {
        p,
        i: i % MODULES,
        ...(i >= MODULES ? { leaf: true as const } : {}),
        renamed: new Array<boolean>(FUNCTIONS).fill(false),
        functions: [],
        init: [],
        method: [],
        base: rnd() < 0.3,
      };
      const stmts = (inMethod: boolean): Stmt[] => Array.from({ length: Math.floor(rnd() * 3) }, () => statement(rnd, m, inMethod));
      for (let k = 0; k < FUNCTIONS; k++) m.functions.push(stmts(false));
      m.init = stmts(false);
      m.method = stmts(true);
      out.push(m);
    }
  return out;
}

/** One random edit of module `m`; returns what it did. */
function edit(rnd: () => number, m: Module): string {
  const r = rnd();
  const defs = [...m.functions, m.init, m.method];
  const which = Math.floor(rnd() * defs.length);
  const body = defs[which]!;
  if (r < 0.4) {
    body.splice(Math.floor(rnd() * (body.length + 1)), 0, statement(rnd, m, which === defs.length - 1));
    return 'statement added';
  }
  if (r < 0.75 && body.length > 0) {
    body.splice(Math.floor(rnd() * body.length), 1);
    return 'statement removed';
  }
  if (r < 0.9) {
    const k = Math.floor(rnd() * FUNCTIONS);
    m.renamed[k] = !m.renamed[k];
    return 'function renamed';
  }
  m.base = !m.base;
  return 'base changed';
}

/** What the index answers: its wrappers with their chains and every file's sites, in a stable order. */
function answers(index: WrapperIndex, paths: readonly string[]): string[] {
  const wrappers = index
    .wrappers()
    .map((w) => `${w.file} ${w.key}@${w.line}: ${w.chains.map((c) => `${c.api}=${c.chain.join('>')}`).join('; ')}`)
    .sort();
  const sites = paths.flatMap((p) => index.sites(p).map((s) => `${p} ${JSON.stringify(s)}`));
  return [...wrappers, ...sites];
}

/**
 * Runs `edits` random edits (seed `seed`) on an index kept up to date, comparing it after each with
 * an index built from scratch on the same texts. @returns the first difference, or undefined
 */
async function firstDifference(finder: CallSiteFinder, seed: number, edits: number): Promise<string | undefined> {
  const rnd = prng(seed);
  const modules = workspace(rnd);
  const paths = [...modules.map(pathOf), ...Array.from({ length: PACKAGES }, (_, p) => `${ROOT}/pkg${p}/__init__.py`)];
  const texts = new Map<string, string>(paths.map((p) => [p, '']));
  for (const m of modules) texts.set(pathOf(m), render(m));
  const live = await WrapperIndex.create(finder);
  try {
    for (const [p, text] of texts) live.setFile(p, 'python', text);
    live.wrappers();
    for (let e = 0; e < edits; e++) {
      // One to three files edited before the index is read again (a batch of changes on disk).
      const done: string[] = [];
      for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) {
        const m = modules[Math.floor(rnd() * modules.length)]!;
        done.push(`${edit(rnd, m)} in ${pathOf(m)}`);
        texts.set(pathOf(m), render(m));
        live.setFile(pathOf(m), 'python', texts.get(pathOf(m))!);
      }
      const fresh = await WrapperIndex.create(finder);
      try {
        for (const [p, text] of texts) fresh.setFile(p, 'python', text);
        const want = answers(fresh, paths);
        const got = answers(live, paths);
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          const missing = want.filter((x) => !got.includes(x));
          const extra = got.filter((x) => !want.includes(x));
          return `seed ${seed}, edit ${e} (${done.join(', ')}):\n  from scratch only: ${missing.slice(0, 3).join('\n    ')}\n  incremental only: ${extra.slice(0, 3).join('\n    ')}`;
        }
      } finally {
        fresh.dispose();
      }
    }
    return undefined;
  } finally {
    live.dispose();
  }
}

describe('wrapper index: incremental derivation', () => {
  test('after each random edit, the index kept up to date answers as one built from scratch', async () => {
    const finder = await loadFinder();
    for (const seed of [1, 2, 3, 4, 5, 6]) assert.equal(await firstDifference(finder, seed, 40), undefined);
  });

  test("a dormant file calling a method of a class that becomes a subclass of a wrapper's class is woken, as from scratch", async () => {
    const finder = await loadFinder();
    const texts = new Map([
      [`${ROOT}/pkg/__init__.py`, ''],
      [
        `${ROOT}/pkg/base.py`,
        'import torch.distributed as dist\n\n\nclass Base:\n    def setup(self, ranks):\n        return dist.new_group(ranks)\n',
      ],
      [
        `${ROOT}/pkg/sub.py`,
        'import torch.distributed as dist\nfrom pkg.base import Base\n\n\nclass Sub:\n    def stop(self):\n        dist.destroy_process_group()\n',
      ],
      // No lifecycle name of its own: parsed only when the wake test says it may call a wrapper.
      [`${ROOT}/app/main.py`, 'from pkg.sub import Sub\n\n\ndef start(ranks):\n    obj = Sub()\n    obj.setup(ranks)\n'],
    ]);
    const live = await WrapperIndex.create(finder);
    for (const [p, text] of texts) live.setFile(p, 'python', text);
    assert.deepEqual(
      live
        .wrappers()
        .map((w) => w.key)
        .sort(),
      ['Base.setup', 'Sub.stop'],
    );
    // Sub now inherits setup: main.py's `obj.setup(ranks)` reaches new_group.
    texts.set(`${ROOT}/pkg/sub.py`, texts.get(`${ROOT}/pkg/sub.py`)!.replace('class Sub:', 'class Sub(Base):'));
    live.setFile(`${ROOT}/pkg/sub.py`, 'python', texts.get(`${ROOT}/pkg/sub.py`)!);
    const fresh = await WrapperIndex.create(finder);
    for (const [p, text] of texts) fresh.setFile(p, 'python', text);
    const paths = [...texts.keys()];
    assert.ok(
      fresh.wrappers().some((w) => w.key === 'start'),
      'from scratch, start reaches new_group',
    );
    assert.deepEqual(answers(live, paths), answers(fresh, paths));
    live.dispose();
    fresh.dispose();
  });

  /** Runs the check (seeds 1–3) with one step of the update replaced by `broken` (a derivation from scratch stays whole). */
  async function withBrokenUpdate(
    patch: (proto: Record<string, (...args: unknown[]) => unknown>, updating: () => boolean) => void,
  ): Promise<(string | undefined)[]> {
    const finder = await loadFinder();
    const proto = WrapperDerivation.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    const saved = Object.fromEntries(Object.getOwnPropertyNames(WrapperDerivation.prototype).map((k) => [k, proto[k]]));
    let updating = false;
    patch(proto, () => updating);
    const patched = proto.update!;
    proto.update = function (this: unknown, ...args: unknown[]) {
      updating = true;
      try {
        return patched.apply(this, args);
      } finally {
        updating = false;
      }
    };
    try {
      const found: (string | undefined)[] = [];
      for (const seed of [1, 2, 3]) found.push(await firstDifference(finder, seed, 40));
      return found;
    } finally {
      for (const [k, v] of Object.entries(saved)) proto[k] = v!;
    }
  }

  test('the check finds an update that does not re-derive the callers of a def whose chains changed', async () => {
    const found = await withBrokenUpdate((proto, updating) => {
      const callersOf = proto.callersOf!;
      proto.callersOf = function (this: unknown, ...args: unknown[]) {
        return updating() ? new Set() : callersOf.apply(this, args);
      };
    });
    if (process.env.SHOW) console.log(found);
    assert.ok(
      found.some((d) => d !== undefined),
      'the broken update went unnoticed',
    );
  });

  test('the check finds an update that ignores changed import aliases', async () => {
    const found = await withBrokenUpdate((proto) => {
      const update = proto.update!;
      proto.update = function (this: unknown, inputs: unknown, dirty: unknown) {
        return update.call(this, inputs, dirty, false);
      };
    });
    if (process.env.SHOW) console.log(found);
    assert.ok(
      found.some((d) => d !== undefined),
      'the broken update went unnoticed',
    );
  });
});
