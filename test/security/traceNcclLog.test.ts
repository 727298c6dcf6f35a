/**
 * A launcher that places ranks on other hosts never gets a path of this machine for NCCL's log
 * (hardening issue, item 7): there NCCL could not open `/tmp/…/%h-%p.nccl.log` and would print
 * its INFO lines into the job's output. The log is then not asked for (NCCL_DEBUG and
 * NCCL_DEBUG_FILE left unset) and the trace says why; a launcher that keeps its ranks here
 * (torchrun, a plain program) still gets it.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ranksElsewhere } from '../../client/trace/jobEnv';
import { runTrace } from '../../client/trace/run';

const root = join(__dirname, '..', '..');

/** Runs `launcher sh -c '<print NCCL_DEBUG_FILE|NCCL_DEBUG>'` traced with a stand-in `launcher` (runs its arguments here) first on the PATH. */
async function envSeenUnder(launcher: string, args: string[] = []): Promise<{ seen: string; note: string | undefined }> {
  const top = mkdtempSync(join(tmpdir(), 'commcost-trace-ncclenv-'));
  const bin = join(top, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, launcher), '#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != -- ]; do shift; done; shift; exec "$@"\n');
  chmodSync(join(bin, launcher), 0o755);
  const seenFile = join(top, 'seen');
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
  delete env.NCCL_DEBUG;
  delete env.NCCL_DEBUG_FILE;
  const r = await runTrace({
    command: [launcher, ...args, '--', 'sh', '-c', 'printf "%s|%s" "$NCCL_DEBUG_FILE" "$NCCL_DEBUG" > "$1"', 'sh', seenFile],
    cwd: top, out: join(top, 'trace.json'), base: join(root, 'cli'), env, stdio: { stdout: () => {}, stderr: () => {} },
  });
  assert.equal(r.exitCode, 0, r.startError);
  return { seen: readFileSync(seenFile, 'utf8'), note: r.trace.ncclLog?.note };
}

test('srun: the job gets no NCCL_DEBUG_FILE of this machine and no NCCL_DEBUG, and the trace says why', async () => {
  const { seen, note } = await envSeenUnder('srun', ['-N', '2']);
  assert.equal(seen, '|', 'neither NCCL_DEBUG_FILE nor NCCL_DEBUG reaches ranks on other hosts');
  assert.match(note ?? '', /srun may place ranks on other hosts/);
});

test('mpirun with hosts: no NCCL log asked; torchrun (local ranks): asked, in the records folder', async () => {
  const mpi = await envSeenUnder('mpirun', ['-H', 'a,b', '-np', '2']);
  assert.equal(mpi.seen, '|');
  assert.match(mpi.note ?? '', /mpirun -H places ranks on the hosts given/);
  const local = await envSeenUnder('torchrun', ['--nproc-per-node=2']);
  assert.match(local.seen, /\/records\/%h-%p\.nccl\.log\|INFO$/);
});

test('ranksElsewhere: launchers, wrappers and allocations', () => {
  assert.match(ranksElsewhere(['env', 'A=1', 'srun', 'python', 'x.py'], {}) ?? '', /srun/);
  assert.match(ranksElsewhere(['/usr/bin/mpirun', '--hostfile=h', 'a.out'], {}) ?? '', /--hostfile/);
  assert.match(ranksElsewhere(['mpiexec', '-n', '4', 'a.out'], { SLURM_JOB_NODELIST: 'n[1-2]' }) ?? '', /allocation/);
  assert.equal(ranksElsewhere(['mpiexec', '-n', '4', 'a.out'], {}), null);
  assert.equal(ranksElsewhere(['torchrun', '--nnodes=2', 'train.py'], { SLURM_JOB_NODELIST: 'n1' }), null);
  assert.equal(ranksElsewhere(['python', 'train.py'], {}), null);
});
