import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PROTOCOL_VERSION } from '../../protocol/events';

const root = join(__dirname, '..', '..');
const pkgVersion = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const expected = `commcost ${pkgVersion} (agent protocol ${PROTOCOL_VERSION})\n`;

test('commcost --version and -V print the package version and the agent protocol version, exit 0', () => {
  for (const flag of ['--version', '-V']) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'cli', 'main.ts'), flag], { cwd: root, encoding: 'utf8' });
    assert.equal(out, expected);
  }
});

test('the bundled CLI (dist/cli.js, as packaged) says the same', { skip: existsSync(join(root, 'dist', 'cli.js')) ? false : 'dist/cli.js not built (npm run build)' }, () => {
  const out = execFileSync(process.execPath, [join(root, 'bin', 'commcost.js'), '--version'], { cwd: root, encoding: 'utf8' });
  assert.equal(out, expected);
});

test('each command\'s --help gives its own exit codes: measure its run\'s, report/scan/plan those of a command that measures nothing', () => {
  const help = (cmd: string): string => execFileSync(process.execPath, ['--import', 'tsx', join(root, 'cli', 'main.ts'), cmd, '--help'], { cwd: root, encoding: 'utf8' });
  assert.match(help('measure'), /1 {4}the run is partial/);
  for (const cmd of ['report', 'scan', 'plan']) {
    const text = help(cmd);
    assert.match(text, /0 {4}done: the summary or table printed, and every output written/, cmd);
    assert.doesNotMatch(text, /the run is partial|Ctrl-C/, cmd);
  }
});
