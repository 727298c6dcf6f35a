/**
 * Shipping: the agent builds the native addon on a host with no matching prebuilt (from the
 * sources the payload carries), and `.vsix` packaging puts in what a user needs and nothing else.
 *
 * The packaging test runs the production build and `vsce package` (≈ 45 s from scratch here, a
 * few seconds when the native artifacts are up to date) when the arm64 cross compiler is present
 * (apt-get install g++-aarch64-linux-gnu); with COMMCOST_REQUIRE_PACKAGE=1 (CI) its absence
 * fails instead of skipping. Afterwards the development bundles are rebuilt.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { parseAgentEvent, type AgentEvent, type DoneEvent } from '../../protocol/events';
import { AddonBuildError, buildAddonOnHost, loadOrBuildAddon } from '../../remote-agent/addonBuild';

const root = path.resolve(__dirname, '..', '..');
const dist = path.join(root, 'dist');
const nativeDist = path.join(dist, 'native');
const platformArch = `${process.platform}-${process.arch}`;
const temps: string[] = [];
after(() => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
}

const sourcesShipped = ['agent.js', 'native/src/build.json', 'native/include/node-addon-api/napi.h', 'native/libnccl-sim.so'].every((f) =>
  fs.existsSync(path.join(dist, f)),
);
const skipBuild = sourcesShipped ? false : 'dist/ is not built: run `npm run build` (npm test builds it)';

/** Runs `agent.js` of `dir` for one simulated run; resolves with its events and stderr. */
function runAgent(dir: string, ms: number): Promise<{ events: AgentEvent[]; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, COMMCOST_SIM_INIT_MS: '5', COMMCOST_SIM_CONNECT_MS: '5', COMMCOST_SIM_CUINIT_MS: '5' };
    delete env.COMMCOST_NATIVE;
    delete env.COMMCOST_AGENT_SCRIPT;
    const child = spawn(process.execPath, [path.join(dir, 'agent.js')], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const events: AgentEvent[] = [];
    let out = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agent did not finish within ${ms} ms; events: ${events.map((e) => e.type).join(', ')}\n${stderr}`));
    }, ms);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      let nl;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (!line) continue;
        const ev = parseAgentEvent(line);
        events.push(ev);
        if (ev.type === 'run/done') child.stdin.end();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ events, stderr, code });
    });
    child.stdin.write(
      JSON.stringify({
        type: 'run/start',
        options: { experiments: ['init'], iterations: 2, warmup: 0, deadlineSeconds: 120, simulate: true, ranks: 2 },
      }) + '\n',
    );
  });
}

describe('on-host build of the native addon (no prebuilt for this host)', { skip: skipBuild }, () => {
  let built = '';

  test(
    'the deployed agent with sources only builds the addon with c++ into its folder, says so on stderr, and runs on it',
    { timeout: 300_000 },
    async () => {
      // A deploy folder as a host with no matching prebuilt sees it: the bundle, the shipped
      // sources and headers, the simulated NCCL; no commcost.node anywhere.
      const dir = tempDir('commcost-hostbuild-');
      fs.copyFileSync(path.join(dist, 'agent.js'), path.join(dir, 'agent.js'));
      fs.cpSync(path.join(nativeDist, 'src'), path.join(dir, 'native', 'src'), { recursive: true });
      fs.cpSync(path.join(nativeDist, 'include'), path.join(dir, 'native', 'include'), { recursive: true });
      fs.copyFileSync(path.join(nativeDist, 'libnccl-sim.so'), path.join(dir, 'native', 'libnccl-sim.so'));

      const { events, stderr } = await runAgent(dir, 280_000);
      assert.match(stderr, new RegExp(`commcost: no prebuilt addon for ${platformArch}; building it with \\S+ from ${dir}/native/src`));
      built = path.join(dir, 'native', 'build', platformArch, 'commcost.node');
      assert.ok(fs.existsSync(built), `${built} was built`);
      assert.match(stderr, new RegExp(`commcost: built ${built} in [\\d.]+ s`));
      const done = events.find((e): e is DoneEvent => e.type === 'run/done');
      assert.equal(done?.status, 'complete', stderr);
      // Ranks loaded the same build (through $COMMCOST_NATIVE): one build only.
      assert.equal(stderr.match(/building it with/g)?.length, 1, stderr);
      assert.deepEqual(fs.readdirSync(path.dirname(built)), ['commcost.node'], 'no temporary file left behind');
    },
  );

  test('the addon built on the host reports a missing NCCL as a clean LOAD error', (t) => {
    if (!built) return t.skip('the build test did not run');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const addon = require(built) as typeof import('../../native/index');
    assert.throws(
      // The simulated library stands in for the CUDA driver (there is none here); NCCL is missing.
      () => addon.load({ ncclPath: '/nonexistent/commcost/libnccl.so.2', cudaPath: path.join(nativeDist, 'libnccl-sim.so') }),
      (e: Error & { code?: string; call?: string }) => {
        assert.equal(e.code, 'LOAD');
        assert.equal(e.call, 'dlopen');
        assert.match(e.message, /\/nonexistent\/commcost\/libnccl\.so\.2/);
        return true;
      },
    );
  });

  test('loadOrBuildAddon: the loader error stands, extended, when there is nothing to build from', () => {
    const empty = tempDir('commcost-empty-');
    const loaderError = Object.assign(new Error('cannot load the commcost native addon (commcost.node). Tried: …'), { code: 'LOAD' });
    assert.throws(
      () =>
        loadOrBuildAddon(
          () => {
            throw loaderError;
          },
          { bundleDir: empty, log: () => undefined },
        ),
      (e: Error) => e === loaderError && /No addon sources to build it on this host/.test(e.message),
    );
    // Errors other than LOAD are not the loader's: passed through untouched, no build.
    const other = new TypeError('boom');
    assert.throws(
      () =>
        loadOrBuildAddon(
          () => {
            throw other;
          },
          { bundleDir: empty },
        ),
      (e) => e === other,
    );
  });

  test('a failing build names the compiler command and its output', () => {
    const src = tempDir('commcost-broken-');
    fs.writeFileSync(path.join(src, 'broken.cc'), 'int broken( {\n');
    fs.writeFileSync(
      path.join(src, 'build.json'),
      JSON.stringify({ sources: ['broken.cc'], include: [], flags: ['-std=c++17', '-shared', '-fPIC'], libs: [] }),
    );
    const out = path.join(src, 'out');
    assert.throws(
      () => buildAddonOnHost({ sourceDir: src, outDir: out, log: () => undefined }),
      (e: unknown) => {
        assert.ok(e instanceof AddonBuildError);
        assert.match(e.message, /building the commcost native addon for \S+ failed: \S+ exited with 1/);
        assert.match(e.message, /command: \S+ -std=c\+\+17 -shared -fPIC \S*broken\.cc -o \S+/);
        assert.match(e.message, /output:\n[^]*broken\.cc:1:[^]*error/);
        assert.equal(e.code, 'LOAD');
        return true;
      },
    );
    assert.deepEqual(fs.readdirSync(out), [], 'no partial output');
    assert.throws(
      () => buildAddonOnHost({ sourceDir: src, outDir: out, cxx: 'commcost-no-such-compiler', log: () => undefined }),
      /no C\+\+ compiler 'commcost-no-such-compiler' on this host[^]*command: commcost-no-such-compiler /,
    );
  });
});

/** Names of the entries of a zip file (its central directory). */
function zipEntries(file: string): string[] {
  const buf = fs.readFileSync(file);
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65_557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  assert.ok(eocd >= 0, `${file} is a zip`);
  const count = buf.readUInt16LE(eocd + 10);
  let at = buf.readUInt32LE(eocd + 16);
  const names: string[] = [];
  for (let n = 0; n < count; n++) {
    assert.equal(buf.readUInt32LE(at), 0x02014b50, 'central directory entry');
    const nameLen = buf.readUInt16LE(at + 28);
    const extraLen = buf.readUInt16LE(at + 30);
    const commentLen = buf.readUInt16LE(at + 32);
    names.push(buf.subarray(at + 46, at + 46 + nameLen).toString('utf8'));
    at += 46 + nameLen + extraLen + commentLen;
  }
  return names;
}

const crossCompiler = spawnSync('aarch64-linux-gnu-g++', ['--version']).status === 0;
const requirePackage = process.env.COMMCOST_REQUIRE_PACKAGE === '1';
const skipPackage =
  crossCompiler || requirePackage
    ? false
    : 'no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu) to cross-compile the arm64 prebuilt';

describe('.vsix packaging', { skip: skipPackage }, () => {
  after(() => {
    // Back to the development bundles (with source maps) the other tests and `npm start` use.
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'ignore' });
  });

  test(
    'npm run package: bundles, grammars, both prebuilt addons, the sources; no node_modules, tests or sources of the bundles',
    { timeout: 600_000 },
    () => {
      const out = path.join(tempDir('commcost-vsix-'), 'commcost.vsix');
      const t0 = Date.now();
      // The same commands as the package script, into a temporary file.
      execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs'), '--production'], { cwd: root, stdio: 'pipe' });
      execFileSync(
        path.join(root, 'node_modules', '.bin', 'vsce'),
        ['package', '--no-dependencies', '--no-rewrite-relative-links', '--readme-path', 'dist/readme/README.md', '-o', out],
        { cwd: root, stdio: 'pipe' },
      );
      const seconds = (Date.now() - t0) / 1000;
      const names = zipEntries(out)
        .filter((n) => n.startsWith('extension/'))
        .map((n) => n.slice('extension/'.length));
      const has = (n: string): void => assert.ok(names.includes(n), `${n} in the package: ${names.join(', ')}`);
      for (const n of ['package.json', 'dist/extension.js', 'dist/cli.js', 'dist/agent.js', 'dist/webview.js', 'bin/commcost.js']) has(n);
      for (const n of ['tree-sitter.wasm', 'tree-sitter-python.wasm', 'tree-sitter-cpp.wasm']) has(`dist/grammars/${n}`);
      for (const arch of ['x64', 'arm64']) {
        has(`dist/native/linux-${arch}/commcost.node`);
        has(`dist/native/linux-${arch}/libnccl-sim.so`);
      }
      for (const n of fs.readdirSync(path.join(root, 'native', 'src'))) has(`dist/native/src/${n}`);
      has('dist/native/src/build.json');
      for (const n of ['napi.h', 'napi-inl.h', 'LICENSE.md']) has(`dist/native/include/node-addon-api/${n}`);
      for (const n of ['node_api.h', 'js_native_api.h', 'js_native_api_types.h', 'node_api_types.h'])
        has(`dist/native/include/node-api-headers/${n}`);
      // The marketplace page: the icon, the user-facing README with every image it shows in the package, the changelog.
      const pkgJson = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { icon: string; scripts: { package: string } };
      assert.match(pkgJson.scripts.package, /--readme-path dist\/readme\/README\.md/, 'npm run package packs the same README as this test');
      has(pkgJson.icon);
      has('readme.md');
      has('changelog.md');
      // The details page loads images from https: and data: only: every image of the packed README is inlined.
      const readme = fs.readFileSync(path.join(root, 'dist', 'readme', 'README.md'), 'utf8');
      assert.ok(readme.startsWith(fs.readFileSync(path.join(root, 'README.vsix.md'), 'utf8').slice(0, 200)), 'the packed README is README.vsix.md');
      const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
      assert.ok(images.length >= 2, 'the README shows images');
      for (const image of images) assert.match(image.slice(0, 40), /^(https:\/\/|data:image\/png;base64,)/, 'an image the details page can load');
      for (const n of ['sample-2xH200-nccl2.28.9.json', 'sample-2xH200-nccl2.30.7.json']) has(`dist/samples/${n}`);
      for (const n of ['ssh2.js', 'ajv.js']) has(`dist/vendor/${n}`);
      has('dist/experimentInfo.js');
      // The lazy bundles activation does not evaluate (scripts/build.mjs LAZY), the validator compiled at build time (PRECOMPILED).
      for (const n of ['measureCommand.js', 'traceCommand.js', 'annotationEngine.js']) has(`dist/${n}`);
      has('dist/vendor/run-file-validator.js');
      has('dist/vendor/web-tree-sitter.js');
      const unwanted = names.filter(
        (n) =>
          /(^|\/)node_modules\//.test(n) ||
          /^(test|out|extension|client|cli|remote-agent|protocol|webview|scripts)\//.test(n) ||
          /\.(test\.ts|map|ts)$/.test(n) ||
          /^dist\/native\/(commcost\.node|libnccl-sim[^/]*\.so|build\/)/.test(n),
      );
      assert.deepEqual(unwanted, [], 'only what the extension, the CLI and the agent need');
      const size = fs.statSync(out).size;
      assert.ok(size < 4 * 1024 * 1024, `the package stays lean: ${size} bytes`);
      console.log(`packaged ${names.length} files, ${(size / 1024 / 1024).toFixed(2)} MiB, in ${seconds.toFixed(1)} s`);
    },
  );
});
