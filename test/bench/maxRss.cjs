// Preloaded (`node -r`) by test/bench/scanRepo.ts: prints the process's peak RSS to stderr at exit.
process.on('exit', () => {
  require('node:fs').writeSync(2, `\nMAXRSS_KB ${process.resourceUsage().maxRSS}\n`);
});
