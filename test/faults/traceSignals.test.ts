/**
 * The traced job is left alone (hardening issue, item 4): under `commcost trace` a terminal's
 * Ctrl-C (SIGINT to the terminal's foreground process group, here the CLI's group) reaches the job
 * once, and the job is given the time its own handler takes (here 6.5 s to "save a checkpoint",
 * longer than the 5 s kill there used to be); a second Ctrl-C ends it; `--deadline` ends the job's
 * whole process group, forked children included.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { alive, killGroup, linesOf, startTraceCli, waitFor } from '../support/traceCli';

/** A job (node) that logs each SIGINT; on the first, "saves" for `saveMs` then exits 0 (never when saveMs is -1). */
function job(dir: string, saveMs: number): { file: string; log: string } {
  const file = join(dir, 'job.js'), log = join(dir, 'job.log');
  writeFileSync(file, `const fs = require('fs'); let n = 0;
process.on('SIGINT', () => { n++; fs.appendFileSync(${JSON.stringify(log)}, 'INT ' + n + '\\n');
  if (n === 1 && ${saveMs} >= 0) setTimeout(() => { fs.appendFileSync(${JSON.stringify(log)}, 'saved\\n'); process.exit(0); }, ${saveMs}); });
fs.appendFileSync(${JSON.stringify(log)}, 'ready ' + process.pid + '\\n');
setInterval(() => {}, 1000);
`);
  return { file, log };
}

function tmp(): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-trace-sig-'));
  return { dir, env: { TMPDIR: dir } };
}

test('one Ctrl-C reaches the job once, and its 6.5 s handler finishes: nothing kills it after 5 s', async () => {
  const { dir, env } = tmp();
  const j = job(dir, 6500);
  const cli = startTraceCli(['--out', join(dir, 't.json'), '--', process.execPath, j.file], dir, env);
  try {
    await waitFor(() => linesOf(j.log).some((l) => l.startsWith('ready')), 60_000, 'the job to start');
    process.kill(-cli.child.pid!, 'SIGINT'); // the terminal's Ctrl-C: the whole foreground group
    const end = await cli.ended;
    const lines = linesOf(j.log);
    assert.deepEqual(lines.slice(1), ['INT 1', 'saved'], `the job got SIGINT once and saved; stderr: ${cli.stderr()}`);
    assert.equal(end.code, 0, 'the exit code is the job\'s');
    assert.equal(JSON.parse(readFileSync(join(dir, 't.json'), 'utf8')).status, 'partial');
  } finally {
    killGroup(cli.child.pid!);
    const pid = Number(linesOf(j.log)[0]?.split(' ')[1]);
    if (pid > 0) killGroup(pid);
  }
});

test('a second Ctrl-C ends a job that does not stop (SIGTERM to its group), and is not passed on as a second SIGINT', async () => {
  const { dir, env } = tmp();
  const j = job(dir, -1);
  const cli = startTraceCli(['--out', join(dir, 't.json'), '--', process.execPath, j.file], dir, env);
  try {
    await waitFor(() => linesOf(j.log).some((l) => l.startsWith('ready')), 60_000, 'the job to start');
    process.kill(-cli.child.pid!, 'SIGINT');
    await waitFor(() => linesOf(j.log).includes('INT 1'), 60_000, 'the first Ctrl-C to reach the job');
    process.kill(-cli.child.pid!, 'SIGINT');
    const end = await cli.ended;
    assert.deepEqual(linesOf(j.log).slice(1), ['INT 1'], 'the job saw one SIGINT');
    assert.equal(end.code, 1, `the job died by a signal; stderr: ${cli.stderr()}`);
    assert.match(cli.stderr(), /ending the job/);
  } finally {
    killGroup(cli.child.pid!);
  }
});

test('--deadline ends the job\'s whole process group: a forked child does not outlive it', async () => {
  const { dir, env } = tmp();
  const pidFile = join(dir, 'forked.pid');
  const cli = startTraceCli(['--deadline', '3', '--out', join(dir, 't.json'), '--', 'sh', '-c', 'sleep 600 & echo $! > "$1"; wait', 'sh', pidFile], dir, env);
  let forked = 0;
  try {
    await cli.exited; // a forked child left alive would hold the CLI's stdout open
    forked = Number(linesOf(pidFile)[0]);
    assert.ok(forked > 0, `the job forked its child before the deadline; stderr: ${cli.stderr()}`);
    await waitFor(() => !alive(forked), 15_000, `the forked child ${forked} to be ended`).catch((e: Error) => assert.fail(`${e.message}: it outlived the job`));
    assert.equal(JSON.parse(readFileSync(join(dir, 't.json'), 'utf8')).status, 'partial');
  } finally {
    killGroup(cli.child.pid!);
    if (forked > 0 && alive(forked)) process.kill(forked, 'SIGKILL');
  }
});
