// The call-site finder on the fixture corpus (expectations are the `expect:` comments in the
// fixtures themselves), the API map, and incremental re-parsing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { API_MAP, FIRST_COLLECTIVE, FRAMEWORK_APIS, NCCL_APIS, PYTHON_APIS, mappedExperiments } from '../../sites/apiMap';
import { ParsedDocument, treeEditOf, type TextChange } from '../../sites/callSites';
import { CALLSITES, fixtureFiles, languageOf, loadFinder, scanText } from '../support/annotationFixtures';

/** `# expect: new_group loop, init_process_group` → per line: "api[ kind]" entries. */
function expectations(text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const m = /expect: ([^*\n]+?)\s*(\*\/)?$/.exec(line);
    if (m?.[1]) for (const e of m[1].split(',')) out.push(`${i + 1} ${e.trim()}`);
  });
  return out.sort();
}

for (const file of fixtureFiles()) {
  test(`finder: ${file} has exactly the expected call sites`, async () => {
    const text = readFileSync(join(CALLSITES, file), 'utf8');
    const scan = await scanText(languageOf(file), text);
    assert.equal(scan.hasError, false, `${file} should parse cleanly`);
    const found = scan.sites.map((s) => `${s.range.start.line + 1} ${s.api}${s.repeated ? ` ${s.repeated.kind}` : ''}`).sort();
    assert.deepEqual(found, expectations(text));
    for (const s of scan.sites) {
      // The range is the call; its callee text is what the name range covers.
      const lines = text.split('\n');
      const name = lines[s.nameRange.start.line]?.slice(
        s.nameRange.start.character,
        s.nameRange.start.line === s.nameRange.end.line ? s.nameRange.end.character : undefined,
      );
      assert.equal(name, s.written.split('\n')[0]);
      assert.equal(text.slice(s.startIndex, s.startIndex + s.written.length), s.written);
    }
  });
}

test('finder: the corpus covers every API of the map', async () => {
  const seen = new Set<string>();
  for (const file of fixtureFiles())
    for (const s of (await scanText(languageOf(file), readFileSync(join(CALLSITES, file), 'utf8'))).sites) seen.add(s.api);
  assert.deepEqual([...seen].sort(), [...NCCL_APIS, ...PYTHON_APIS, ...FRAMEWORK_APIS, FIRST_COLLECTIVE].sort());
});

const aliasCases: [string, string, string | undefined][] = [
  ['import torch.distributed as dist\ndist.new_group()\n', 'dist.new_group', 'new_group'],
  ['import torch.distributed as td\ntd.split_group(None, [[0]])\n', 'td.split_group', 'split_group'],
  ['from torch.distributed import new_group as ng\nng([0, 1])\n', 'ng', 'new_group'],
  ['from torch import distributed as D\nD.init_process_group("nccl")\n', 'D.init_process_group', 'init_process_group'],
  ['import torch\ntorch.distributed.destroy_process_group()\n', 'torch.distributed.destroy_process_group', 'destroy_process_group'],
  ['from torch.distributed.device_mesh import init_device_mesh as idm\nidm("cuda", (2,))\n', 'idm', 'init_device_mesh'],
  [
    'from torch.distributed.distributed_c10d import _abort_process_group\n_abort_process_group()\n',
    '_abort_process_group',
    '_abort_process_group',
  ],
  [
    'import torch.distributed as dist\npg, _ = dist.new_subgroups_by_enumeration([[0, 1], [2, 3]], backend="nccl")\n',
    'dist.new_subgroups_by_enumeration',
    'new_subgroups',
  ],
  [
    'import torch.distributed as dist\ndist.new_subgroups_by_enumeration([[0, 1]], None, "gloo")\n',
    'dist.new_subgroups_by_enumeration',
    undefined,
  ],
  ['import mylib as dist2\ndist2.new_group()\n', 'dist2.new_group', undefined],
  ['from mylib import new_group\nnew_group()\n', 'new_group', undefined],
  ['import torch.distributed as dist\nclass W:\n    def abort(self):\n        pass\nW().abort()\n', 'W().abort', undefined],
  ['import torch.distributed as dist\ng = dist.new_group()\ng.abort()\n', 'g.abort', 'ProcessGroup.abort'],
];
for (const [text, written, api] of aliasCases) {
  test(`finder: ${JSON.stringify(written)} in ${JSON.stringify(text.split('\n')[0])} → ${api ?? 'no call site'}`, async () => {
    const scan = await scanText('python', text);
    const site = scan.sites.find((s) => s.written === written);
    assert.equal(site?.api, api);
  });
}

test('finder: keywords, assignment, warm-up and collectives after init', async () => {
  const text = readFileSync(join(CALLSITES, 'train_alias.py'), 'utf8');
  const scan = await scanText('python', text);
  const init = scan.sites.find((s) => s.api === 'init_process_group');
  assert.deepEqual([init?.keywords, init?.collectivesAfter], [['backend'], true]);
  const pg = scan.sites.find((s) => s.assignedTo === 'pg');
  // The warm-up right after creation is the group's first collective (#27 rule 3).
  assert.deepEqual(pg?.warmUp, { variable: 'pg', warm: true, firstCollective: { line: 34, call: 'dist.all_reduce', function: 'main' } });
  const tp = scan.sites.find((s) => s.assignedTo === 'tp_group');
  assert.deepEqual(tp?.warmUp, {
    variable: 'tp_group',
    warm: false,
    firstCollective: { line: 27, call: 'dist.all_reduce', function: 'train_step' },
  });
  assert.equal(tp?.statement?.indent, '    ');
  assert.deepEqual(scan.facts, { torchName: 'torch', distName: 'dist', importInsertLine: 7 });
});

// `# first-collective-of: X` marks the line of the first collective on the group assigned to X.
for (const file of ['group_flow_tuple.py', 'group_flow_class.py']) {
  test(`finder: ${file}: each group's first collective is found across functions (returns, tuples, attributes, aliases, globals), never a return or a mention`, async () => {
    const text = readFileSync(join(CALLSITES, file), 'utf8');
    const lines = text.split('\n');
    const marked = new Map<string, number>();
    lines.forEach((l, i) => {
      const m = /# first-collective-of: (\S+)/.exec(l);
      if (m?.[1]) marked.set(m[1], i);
    });
    const scan = await scanText('python', text);
    const groups = scan.sites.filter((s) => s.warmUp);
    assert.ok(groups.length >= 3 && marked.size >= 3, file);
    for (const s of groups) {
      const w = s.warmUp!;
      assert.equal(w.warm, false);
      assert.equal(w.firstCollective?.line, marked.get(w.variable), `${file}: ${w.variable}`);
      if (!w.firstCollective) continue;
      const line = lines[w.firstCollective.line]!;
      assert.ok(line.trimStart().startsWith(w.firstCollective.call + '('), line);
      assert.doesNotMatch(line, /^\s*return\b/);
    }
    // Every marked group was found (a group never used by a collective has no marker and no line).
    assert.deepEqual(
      [...marked.keys()].sort(),
      groups
        .filter((s) => s.warmUp!.firstCollective)
        .map((s) => s.warmUp!.variable)
        .sort(),
    );
  });
}

test('finder: a group followed only to returns and mentions gets no first collective', async () => {
  const text =
    'import torch.distributed as dist\n\ndef make():\n    g = dist.new_group([0, 1])\n    print(g)\n    return g\n\ndef user():\n    h = make()\n    log(h)\n    return h\n';
  const site = (await scanText('python', text)).sites.find((s) => s.warmUp);
  assert.deepEqual(site?.warmUp, { variable: 'g', warm: false });
});

test('finder: a name in a comment or string is never a call site (C, C++, Python)', async () => {
  for (const [language, text] of [
    ['cpp', '// ncclCommSplit(a, b, c, &d, NULL)\nconst char* s = "ncclCommAbort(c)";\n'],
    ['c', '/* ncclCommInitRank(&c, 2, id, 0) */\n#define DOC "ncclCommDestroy(c)"\n'],
    ['python', '# dist.new_group()\nx = "dist.init_process_group()"\n"""torch.distributed.split_group()"""\n'],
  ] as const) {
    assert.deepEqual((await scanText(language, text)).sites, []);
  }
});

test('map: every API has an entry of its language; c10d wrappers fall back to the NCCL call beneath', () => {
  for (const api of NCCL_APIS) assert.deepEqual([API_MAP[api].language, API_MAP[api].callsInto], ['cpp', api]);
  for (const api of [...PYTHON_APIS, ...FRAMEWORK_APIS, FIRST_COLLECTIVE]) {
    assert.equal(API_MAP[api].language, 'python');
    assert.ok((NCCL_APIS as readonly string[]).includes(API_MAP[api].callsInto), `${api} ends in an NCCL call`);
  }
  for (const api of PYTHON_APIS) {
    assert.equal(API_MAP[api].language, 'python');
    assert.equal(API_MAP[api].answer.experiment, 'c10d');
    assert.ok(API_MAP[api].underlying, `${api} has an underlying NCCL answer`);
  }
  const expected: [string, string, string[]][] = [
    ['ncclCommInitRank', 'init', ['default']],
    [
      'ncclCommSplit',
      'split',
      [
        'halves/splitShare=0',
        'whole/splitShare=0',
        'intra-node/splitShare=0',
        'inter-node/splitShare=0',
        'halves/splitShare=1',
        'whole/splitShare=1',
        'intra-node/splitShare=1',
        'inter-node/splitShare=1',
      ],
    ],
    ['ncclCommShrink', 'shrink', []],
    ['ncclCommGrow', 'grow', []],
    ['ncclCommRevoke', 'revoke', []],
    ['ncclCommDestroy', 'destroy', ['default']],
    ['ncclCommAbort', 'abort', ['default']],
    ['ncclCommRegister', 'registration', ['register']],
    ['ncclCommSuspend', 'suspend', []],
  ];
  for (const [api, experiment, variants] of expected) {
    const e = API_MAP[api as keyof typeof API_MAP];
    assert.deepEqual([e.answer.experiment, [...e.answer.variants]], [experiment, variants], api);
  }
  assert.deepEqual(mappedExperiments().sort(), [
    'abort',
    'c10d',
    'destroy',
    'devComm',
    'grow',
    'init',
    'memStats',
    'registration',
    'revoke',
    'shrink',
    'split',
    'suspend',
  ]);
});

function change(text: string, offset: number, length: number, insert: string): { change: TextChange; text: string } {
  const pos = (o: number) => {
    const before = text.slice(0, o).split('\n');
    return { line: before.length - 1, character: before[before.length - 1]?.length ?? 0 };
  };
  return {
    change: { rangeOffset: offset, rangeLength: length, range: { start: pos(offset), end: pos(offset + length) }, text: insert },
    text: text.slice(0, offset) + insert + text.slice(offset + length),
  };
}

test('incremental re-parse (tree.edit + parse) gives the same call sites as a full parse', async () => {
  const finder = await loadFinder();
  let text = readFileSync(join(CALLSITES, 'train_alias.py'), 'utf8');
  const doc = new ParsedDocument(finder, 'python');
  doc.reparse(text);
  // Wrap main's new_group in a loop, then rename a call, then delete a line: three edits, one re-parse.
  const edits: [string, string][] = [
    ['    pg = dist.new_group([0, 1])', '    for _ in range(3):\n        pg = dist.new_group([0, 1])'],
    ['dist.destroy_process_group()  # expect', 'dist.init_process_group("nccl")  # expect'],
    ['    pg.abort()  # expect: ProcessGroup.abort\n', ''],
  ];
  const changes: TextChange[] = [];
  for (const [from, to] of edits) {
    const at = text.indexOf(from);
    assert.ok(at >= 0);
    const c = change(text, at, from.length, to);
    changes.push(c.change);
    text = c.text;
  }
  doc.edit(changes);
  const incremental = doc.reparse(text);
  const full = await scanText('python', text);
  assert.deepEqual(incremental.sites, full.sites);
  const looped = full.sites.find((s) => s.assignedTo === 'pg');
  assert.equal(looped?.repeated?.kind, 'loop');
  assert.equal(full.sites.filter((s) => s.api === 'init_process_group').length, 2);
  assert.equal(
    full.sites.some((s) => s.api === 'ProcessGroup.abort'),
    false,
  );
  doc.dispose();
});

test('treeEditOf: positions of a multi-line insertion', () => {
  const e = treeEditOf({
    rangeOffset: 10,
    rangeLength: 2,
    range: { start: { line: 1, character: 4 }, end: { line: 1, character: 6 } },
    text: 'ab\ncde',
  });
  assert.deepEqual(e, {
    startIndex: 10,
    oldEndIndex: 12,
    newEndIndex: 16,
    startPosition: { row: 1, column: 4 },
    oldEndPosition: { row: 1, column: 6 },
    newEndPosition: { row: 2, column: 3 },
  });
});

// Eager or lazy, from the code only (CallSite `eager`): [text, written, eager].
const eagerCases: [string, string, boolean | undefined][] = [
  ['import torch.distributed as dist\ndist.init_process_group("nccl", device_id=dev)\n', 'dist.init_process_group', true],
  ['import torch.distributed as dist\ndist.init_process_group("nccl")\n', 'dist.init_process_group', false],
  ['import torch.distributed as dist\ndist.init_process_group("nccl", **kwargs)\n', 'dist.init_process_group', undefined],
  ['import torch.distributed as dist\ndist.init_process_group("nccl")\ndist.barrier()\n', 'dist.init_process_group', true],
  ['import torch.distributed as dist\ndist.init_process_group("nccl")\ng = dist.new_group([0, 1])\n', 'dist.new_group', false],
  ['import torch.distributed as dist\ndist.init_process_group("nccl", device_id=d)\ng = dist.new_group([0, 1])\n', 'dist.new_group', true],
  ['import torch.distributed as dist\ng = dist.new_group([0, 1])\n', 'dist.new_group', undefined],
  ['import torch.distributed as dist\ng = dist.new_group([0, 1])\ndist.all_reduce(t, group=g)\n', 'dist.new_group', true],
  ['import torch.distributed as dist\ng = dist.split_group(None, [[0, 1]])\n', 'dist.split_group', true],
  [
    'from torch.distributed import ProcessGroupNCCL\ndef f(s, r, n):\n    b = ProcessGroupNCCL(s, r, n)\n    b.eager_connect_single_device(dev)\n',
    'ProcessGroupNCCL',
    true,
  ],
  [
    'from torch.distributed import ProcessGroupNCCL\ndef f(s, r, n):\n    b = ProcessGroupNCCL(s, r, n)\n    return b\n',
    'ProcessGroupNCCL',
    false,
  ],
  [
    'from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\nc = PyNcclCommunicator(g, device=d)\n',
    'PyNcclCommunicator',
    true,
  ],
  ['def f(lib, c):\n    lib.ncclCommInitRank(c, 2, uid, 0)\n', 'lib.ncclCommInitRank', true],
  ['import ray.util.collective as col\ncol.init_collective_group(2, 0)\n', 'col.init_collective_group', undefined],
];
for (const [text, written, eager] of eagerCases) {
  test(`finder: ${written} in ${JSON.stringify(text.split('\n').slice(1).join(' ').slice(0, 70))} is ${eager === undefined ? 'not said eager or lazy' : eager ? 'eager' : 'lazy'}`, async () => {
    const site = (await scanText('python', text)).sites.find((s) => s.written === written);
    assert.ok(site, `${written} is a call site`);
    assert.equal(site.eager, eager);
  });
}

test('finder: C/C++ creations are eager and every site says the NCCL call it ends in', async () => {
  const cpp = await scanText('cpp', 'void f() { ncclCommInitRank(&c, 2, id, 0); ncclCommDestroy(c); }\n');
  assert.deepEqual(
    cpp.sites.map((s) => [s.api, s.callsInto, s.eager]),
    [
      ['ncclCommInitRank', 'ncclCommInitRank', true],
      ['ncclCommDestroy', 'ncclCommDestroy', undefined],
    ],
  );
  const py = await scanText('python', readFileSync(join(CALLSITES, 'frameworks.py'), 'utf8'));
  const into = (w: string): string | undefined => py.sites.find((s) => s.written === w)?.callsInto;
  assert.deepEqual(
    [into('tc.split'), into('child.finalize'), into('PyNcclCommunicator'), into('pg.eager_connect_single_device'), into('ft.configure')],
    ['ncclCommSplit', 'ncclCommDestroy', 'ncclCommInitRank', 'ncclCommInitRankConfig', 'ncclCommInitRankConfig'],
  );
});

test("finder: a lazy group's first collective names its group and the creation line; an eager group has none", async () => {
  const scan = await scanText('python', readFileSync(join(CALLSITES, 'lazy_first.py'), 'utf8'));
  const firsts = scan.sites
    .filter((s) => s.role === 'firstCollective')
    .map((s) => [s.range.start.line + 1, s.written, s.firstCollectiveOf]);
  assert.deepEqual(firsts, [
    [8, 'dist.reduce_scatter_tensor', { variable: 'the default group', line: 16, api: 'init_process_group', collective: 'reduce_scatter_tensor' }],
    [20, 'dist.barrier', { variable: 'tp', line: 11, api: 'new_group', collective: 'barrier' }],
  ]);
  const eager = await scanText(
    'python',
    'import torch.distributed as dist\ndef main():\n    dist.init_process_group("nccl", device_id=d)\n    dist.all_reduce(x)\n',
  );
  assert.equal(eager.sites.filter((s) => s.role === 'firstCollective').length, 0);
});

test('finder: CUDA the grammar cannot parse (kernel launches, macros read as declarations) still has its NCCL calls, and only those', async () => {
  const text = [
    '__global__ void k(float* x) { x[0] = 1; }',
    'void run(ncclComm_t comm, float* x) {',
    '  k<<<1, 32, 0, stream>>>(x);',
    '  NCCLCHECK(ncclCommWindowRegister(comm, x, 4, &win, 0));',
    '  /* ncclCommDestroy(comm) later */',
    '  if (last) {',
    '    NCCLCHECK(ncclCommFinalize(comm))  // a macro that brings its own `;`: read as a declaration',
    '  }',
    '  NCCLCHECK(ncclCommDestroy(comm));',
    '}',
    'ncclResult_t ncclCommAbort(ncclComm_t comm);',
    '',
  ].join('\n');
  const scan = await scanText('cpp', text);
  assert.deepEqual(
    scan.sites.map((s) => `${s.range.start.line + 1} ${s.api}`),
    ['4 ncclCommWindowRegister', '7 ncclCommFinalize', '9 ncclCommDestroy'],
  );
});
