// "Trace Python File" on a launch configuration (extension/traceLaunch.ts): which configurations
// count, the command line of a program and of a module (torchrun as `-m torch.distributed.run`),
// variables, and the configurations it refuses with why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPythonLaunch, launchCommand, substitute } from '../../extension/traceLaunch';

const v = { workspaceFolder: '/ws', file: '/ws/examples/train.py', python: 'python3' };

test('only Python launch configurations with a name count', () => {
  assert.equal(isPythonLaunch({ type: 'debugpy', request: 'launch', name: 'a', program: 'x.py' }), true);
  assert.equal(isPythonLaunch({ type: 'python', request: 'launch', name: 'a', module: 'm' }), true);
  assert.equal(isPythonLaunch({ type: 'debugpy', request: 'attach', name: 'a' }), false);
  assert.equal(isPythonLaunch({ type: 'node', request: 'launch', name: 'a' }), false);
  assert.equal(isPythonLaunch({ type: 'debugpy', request: 'launch' }), false);
  assert.equal(isPythonLaunch(['debugpy']), false);
  assert.equal(isPythonLaunch(null), false);
});

test('a program with args, cwd, env and its own python; variables substituted', () => {
  const l = launchCommand(
    {
      type: 'debugpy',
      request: 'launch',
      name: 'train',
      program: '${workspaceFolder}/train.py',
      args: ['--data', '${fileDirname}/data', '${env:HOME}'],
      cwd: '${workspaceFolder}/run',
      env: { WORLD_SIZE: '1', OUT: '${fileBasename}.out' },
      python: '/venv/bin/python',
    },
    v,
    { HOME: '/home/me' },
  );
  assert.deepEqual(l, {
    name: 'train',
    command: ['/venv/bin/python', '/ws/train.py', '--data', '/ws/examples/data', '/home/me'],
    cwd: '/ws/run',
    env: { WORLD_SIZE: '1', OUT: 'train.py.out' },
  });
});

test('a module (torchrun) with args as one string; the folder defaults to the workspace', () => {
  const l = launchCommand({ type: 'debugpy', request: 'launch', name: 'tr', module: 'torch.distributed.run', args: '--nproc-per-node=2  ${file}' }, v);
  assert.deepEqual(l.command, ['python3', '-m', 'torch.distributed.run', '--nproc-per-node=2', '/ws/examples/train.py']);
  assert.equal(l.cwd, '/ws');
});

test('refused with why: no program or module, wrong types, a variable it does not substitute', () => {
  const base = { type: 'debugpy', request: 'launch', name: 'x' };
  assert.throws(() => launchCommand(base, v), /neither "program" nor "module"/);
  assert.throws(() => launchCommand({ ...base, program: 3 }, v), /"program" must be a string/);
  assert.throws(() => launchCommand({ ...base, program: 'a.py', args: [1] }, v), /"args" must be a list of strings/);
  assert.throws(() => launchCommand({ ...base, program: 'a.py', env: { A: 1 } }, v), /"env.A" must be a string/);
  assert.throws(() => launchCommand({ ...base, program: '${command:pickFile}' }, v), /uses \$\{command:pickFile\}, which "Trace Python File" does not substitute/);
  // ${file} without an active file is not guessed.
  assert.throws(() => substitute('${file}', { workspaceFolder: '/ws', python: 'python3' }), /\$\{file\}/);
});
