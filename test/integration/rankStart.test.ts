/**
 * Rank processes start together (remote-agent/rankSpawner.ts): when one of them cannot start,
 * the session still ends with an error naming that rank, the others are stopped, and no process
 * is left. The simulated NCCL; COMMCOST_AGENT_SCRIPT points rank processes at a wrapper that
 * fails for one rank and runs the real agent for the others.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { distDir, is, NOT_BUILT, startAgent, trackedRuns, waitGone } from '../support/agentHarness';

const runs = trackedRuns();
after(runs.cleanup);

const WRAPPER = `
if (process.env.COMMCOST_RANK === process.env.FAIL_RANK) {
  console.error('rank ' + process.env.COMMCOST_RANK + ': failing at start on purpose');
  process.exit(3);
}
require(process.env.REAL_AGENT);
`;

describe('rank processes started together', { skip: NOT_BUILT }, () => {
  for (const failRank of [0, 3]) {
    test(`rank ${failRank} of 4 fails at start: RANK_EXITED naming it, the run failed, the other ranks stopped, nothing left`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-rankstart-'));
      const wrapper = path.join(dir, 'rank.js');
      fs.writeFileSync(wrapper, WRAPPER);
      const run = runs.track(
        startAgent({ experiments: ['init'], iterations: 2, ranks: 4, deadlineSeconds: 30 }, { COMMCOST_AGENT_SCRIPT: wrapper, REAL_AGENT: path.join(distDir, 'agent.js'), FAIL_RANK: String(failRank) }),
      );
      const error = await run.waitFor(is('run/error'), 60_000);
      const done = await run.waitFor(is('run/done'), 60_000);
      assert.equal(error.code, 'RANK_EXITED', JSON.stringify(error));
      assert.equal(error.where.rank, failRank);
      assert.match(error.message, new RegExp(`^rank ${failRank} exited \\(code 3\\)`));
      assert.equal(done.status, 'failed');
      assert.match(run.stderr.join(''), new RegExp(`\\[rank ${failRank}\\] rank ${failRank}: failing at start on purpose`));
      assert.equal(await run.exited, 0);
      assert.deepEqual(await waitGone(dir), [], 'rank processes left');
      assert.deepEqual(await waitGone(run.dir), [], 'agent processes left');
      fs.rmSync(dir, { recursive: true, force: true });
    });
  }
});
