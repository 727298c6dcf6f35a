// Runs a command beside a CPU load generator: `node scripts/cpuLoad.mjs [--workers N] -- <command…>`.
// N busy threads (default: one per core) spin for as long as the command runs, so that a test
// suite run this way shows whether it holds on a busy machine (.ci/run runs `npm test` so). Exits
// with the command's exit status; the load stops with it, and on SIGINT/SIGTERM.
import { spawn } from 'node:child_process';
import { availableParallelism, constants } from 'node:os';
import { Worker } from 'node:worker_threads';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
if (dash < 0 || dash === argv.length - 1) {
  console.error('usage: node scripts/cpuLoad.mjs [--workers N] -- <command> [args…]');
  process.exit(2);
}
const opts = argv.slice(0, dash);
const wi = opts.indexOf('--workers');
const workers = wi >= 0 ? Number(opts[wi + 1]) : availableParallelism();
if (!Number.isInteger(workers) || workers < 0 || workers > 256) {
  console.error(`cpuLoad: --workers ${opts[wi + 1]}: expected a whole number from 0 to 256`);
  process.exit(2);
}
const spin = 'let x = 0; for (;;) { for (let i = 0; i < 1e7; i++) x = (x * 1103515245 + 12345) % 2147483648; }';
const threads = Array.from({ length: workers }, () => new Worker(spin, { eval: true }));
console.error(`cpuLoad: ${workers} busy thread${workers === 1 ? '' : 's'} (${availableParallelism()} cores) beside: ${argv.slice(dash + 1).join(' ')}`);
const child = spawn(argv[dash + 1], argv.slice(dash + 2), { stdio: 'inherit' });
const stop = () => Promise.all(threads.map((t) => t.terminate()));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', async (code, signal) => {
  await stop();
  process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});
