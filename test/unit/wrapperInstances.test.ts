// The wrapper index through instances of a project's own classes (wrapperFacts.ts `instanceOf`,
// wrapperIndex.ts `instanceMethod`), on a synthetic package written for this test
// (test/fixtures/callsites/instances): `x.m(…)` where `x = C(…)` in the same
// function, at module level rebound through `global`, or `self.x = C(…)` in the class's methods,
// is a call of `C.m`; never on a parameter of the same name, nor on another class's instance.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';
import { lineOf } from '../support/wrapperSites';

const PKG = join(CALLSITES, 'instances');
const USER = join(PKG, 'user.py');

test('methods of a class called on its instances are sites through wrappers; on a parameter or another class, none', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of ['__init__.py', 'comm_backend.py', 'user.py']) index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  const got = index.callerSites(USER).map((s) => `${s.range.start.line + 1} ${s.written} ${s.api} ${s.chain.join(' > ')}`);
  const at = (re: RegExp): number => lineOf(USER, re);
  assert.deepEqual(got, [
    `${at(/backend = Backend\("nccl"\)/)} Backend init_process_group Backend > torch.distributed.init_process_group`,
    `${at(/return backend\.new_group\(ranks\)$/)} backend.new_group new_group Backend.new_group > torch.distributed.new_group`,
    `${at(/b = cb\.Backend/)} cb.Backend init_process_group Backend > torch.distributed.init_process_group`,
    `${at(/g = b\.new_group/)} b.new_group new_group Backend.new_group > torch.distributed.new_group`,
    `${at(/self\.comm = Backend/)} Backend init_process_group Backend > torch.distributed.init_process_group`,
    `${at(/self\.group = self\.comm\.new_group/)} self.comm.new_group new_group Backend.new_group > torch.distributed.new_group`,
    `${at(/self\.comm\.destroy\(/)} self.comm.destroy destroy_process_group Backend.destroy > torch.distributed.destroy_process_group`,
  ]);
});
