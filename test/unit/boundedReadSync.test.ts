// boundedRead.ts `readBoundedTextSync` (issue #27, speed: `commcost scan` reads each file when its
// turn comes, and the wrapper index reads a file again when it wakes): the same checks and the same
// answers as `readBoundedText`, for a regular file, one over the cap, a link, a FIFO, a missing file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readBoundedText, readBoundedTextSync } from '../../client/boundedRead';

test('readBoundedTextSync answers as readBoundedText does, and never blocks on a FIFO', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-boundedsync-'));
  writeFileSync(join(dir, 'a.py'), 'x = "é ü"\n');
  writeFileSync(join(dir, 'big.py'), 'y'.repeat(2048));
  symlinkSync(join(dir, 'a.py'), join(dir, 'link.py'));
  execFileSync('mkfifo', [join(dir, 'fifo.py')]);
  const cases: [string, { ok: true; text: string } | { ok: false; reason: RegExp }][] = [
    ['a.py', { ok: true, text: 'x = "é ü"\n' }],
    ['big.py', { ok: false, reason: /^2 KiB, over the 1 KiB limit$/ }],
    ['link.py', { ok: false, reason: /^a symbolic link \(not followed\)$/ }],
    ['fifo.py', { ok: false, reason: /^a named pipe \(FIFO\), not a regular file$/ }],
    ['missing.py', { ok: false, reason: /^no such file$/ }],
  ];
  for (const [name, want] of cases) {
    const sync = readBoundedTextSync(join(dir, name), { maxBytes: 1024 });
    assert.deepEqual(sync, await readBoundedText(join(dir, name), { maxBytes: 1024 }), name);
    if (want.ok) assert.deepEqual(sync, want, name);
    else assert.ok(!sync.ok && want.reason.test(sync.reason), `${name}: ${JSON.stringify(sync)}`);
  }
  assert.deepEqual(readBoundedTextSync(join(dir, 'link.py'), { maxBytes: 1024, followLinks: true }), { ok: true, text: 'x = "é ü"\n' });
});
