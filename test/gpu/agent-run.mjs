#!/usr/bin/env node
// Drives dist/agent.js directly (no CLI): sends run/start with the options given as JSON,
// writes every event line to the output file, and ends when run/done arrives.
// Usage: agent-run.mjs '<options json>' <events.jsonl>
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

const [optionsJson, outFile] = process.argv.slice(2);
const out = createWriteStream(outFile);
const agent = spawn(process.execPath, ['dist/agent.js'], { stdio: ['pipe', 'pipe', 'inherit'] });
agent.stdin.write(JSON.stringify({ type: 'run/start', options: JSON.parse(optionsJson) }) + '\n');
let buf = '';
agent.stdout.on('data', (d) => {
  buf += d.toString();
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    out.write(line + '\n');
    const ev = JSON.parse(line);
    if (ev.type === 'run/error' || ev.type === 'experiment/skipped' || ev.type === 'run/done') console.log(line.slice(0, 600));
    if (ev.type === 'experiment/summary') for (const v of ev.variants) for (const s of v.steps) console.log(`${ev.experiment} ${v.variant} ${s.step} median ${s.stats.median.toFixed(3)} p90 ${s.stats.p90.toFixed(3)} n ${s.stats.n}`);
    if (ev.type === 'run/done') agent.stdin.end();
  }
});
agent.on('exit', (code) => out.end(() => process.exit(code ?? 1)));
