/**
 * The real-VS-Code harness of the UI tests: code-server (from the test-only cache that
 * test/ui/install.sh fills) with the built extension copied into a fresh extensions folder,
 * headless Debian Chromium driven by playwright-core, and the loopback OpenSSH server of
 * test/support/sshServer.ts reachable as the alias `commcost-test`.
 *
 * How the extension finds the test sshd without touching the user's files: code-server runs with
 * HOME set to a temp folder whose `.ssh/config` holds the alias (HostName 127.0.0.1, the free
 * port, IdentityFile = the test client key) and whose `.ssh/known_hosts` holds the server's host
 * key. client/hosts.ts and client/knownHosts.ts read `~/.ssh/...` through `os.homedir()`, which
 * follows HOME, so no extension setting is needed; SSH_AUTH_SOCK is cleared.
 *
 * Every process started here (sshd, code-server with its extension hosts, Chromium) is stopped by
 * {@link UiSession.stop}, and killed by process id on an unexpected exit.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

// From test/ui/ in the repository; a bundled copy (dist/bench.js on a GPU host) runs from the
// repository root, where __dirname is dist/.
export const REPO = existsSync(join(resolve(__dirname, '..', '..'), 'package.json')) ? resolve(__dirname, '..', '..') : process.cwd();
export const CODE_SERVER_VERSION = '4.100.3';
export const UI_CACHE = process.env.COMMCOST_UI_CACHE || join(homedir(), '.cache', 'commcost-ui');
export const CODE_SERVER_DIR = join(UI_CACHE, `code-server-${CODE_SERVER_VERSION}`);
export const CODE_SERVER_ENTRY = join(CODE_SERVER_DIR, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
export const CHROMIUM = process.env.COMMCOST_CHROMIUM || '/usr/bin/chromium';
/** Screenshots and the code-server / extension host logs of the last run. */
export const OUT_DIR = join(REPO, 'test-output', 'ui');
/** The extension's folder name under the extensions dir: `<publisher>.<name>-<version>`. */
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { publisher: string; name: string; version: string };
export const EXTENSION_ID = `${pkg.publisher}.${pkg.name}`;

/** Why the UI tests cannot run here, or undefined when they can. */
export function uiMissingReason(): string | undefined {
  const missing: string[] = [];
  if (!existsSync(CHROMIUM)) missing.push(`${CHROMIUM} (apt-get install -y chromium)`);
  if (!existsSync(CODE_SERVER_ENTRY)) missing.push(`code-server ${CODE_SERVER_VERSION} in ${CODE_SERVER_DIR} (run test/ui/install.sh)`);
  else if (!existsSync(join(CODE_SERVER_DIR, 'node_modules', 'playwright-core', 'package.json')))
    missing.push(`playwright-core in ${CODE_SERVER_DIR} (run test/ui/install.sh)`);
  const sshd = sshdMissingReason();
  if (sshd) missing.push(sshd);
  if (!existsSync(join(REPO, 'dist', 'extension.js'))) missing.push('dist/extension.js (npm run build)');
  return missing.length > 0 ? `missing ${missing.join('; ')}` : undefined;
}

// --- minimal typing of the playwright-core surface used here (it lives in the UI cache, not node_modules)
export interface Locator {
  first(): Locator;
  last(): Locator;
  nth(i: number): Locator;
  locator(selector: string, options?: { hasText?: string | RegExp }): Locator;
  filter(options: { hasText?: string | RegExp }): Locator;
  waitFor(options?: { state?: 'attached' | 'detached' | 'visible' | 'hidden'; timeout?: number }): Promise<void>;
  click(options?: { timeout?: number; position?: { x: number; y: number } }): Promise<void>;
  hover(options?: { timeout?: number; position?: { x: number; y: number } }): Promise<void>;
  textContent(options?: { timeout?: number }): Promise<string | null>;
  innerText(options?: { timeout?: number }): Promise<string>;
  allInnerTexts(): Promise<string[]>;
  count(): Promise<number>;
  isVisible(): Promise<boolean>;
  evaluate<T>(fn: string | ((el: any, arg: any) => T), arg?: unknown): Promise<T>;
  boundingBox(): Promise<{ x: number; y: number; width: number; height: number } | null>;
  screenshot(options: { path: string }): Promise<unknown>;
}
export interface Frame {
  url(): string;
  evaluate<T>(expression: string): Promise<T>;
  locator(selector: string, options?: { hasText?: string | RegExp }): Locator;
}
export interface Page {
  goto(url: string, options?: { waitUntil?: string; timeout?: number }): Promise<unknown>;
  locator(selector: string, options?: { hasText?: string | RegExp }): Locator;
  keyboard: { press(key: string): Promise<void>; type(text: string, options?: { delay?: number }): Promise<void> };
  mouse: {
    move(x: number, y: number): Promise<void>;
    click(x: number, y: number): Promise<void>;
    wheel(dx: number, dy: number): Promise<void>;
  };
  frames(): Frame[];
  evaluate<T>(expression: string): Promise<T>;
  screenshot(options: {
    path: string;
    fullPage?: boolean;
    clip?: { x: number; y: number; width: number; height: number };
  }): Promise<unknown>;
  waitForTimeout(ms: number): Promise<void>;
  setViewportSize(size: { width: number; height: number }): Promise<void>;
  on(event: 'console' | 'pageerror', fn: (arg: any) => void): void;
}
interface Browser {
  newPage(options?: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' }): Promise<Page>;
  close(): Promise<void>;
}
interface ChromiumLauncher {
  launch(options: { executablePath: string; headless: boolean; args: string[] }): Promise<Browser>;
}

function loadPlaywright(): { chromium: ChromiumLauncher } {
  const req = createRequire(join(CODE_SERVER_DIR, 'package.json'));
  return req('playwright-core') as { chromium: ChromiumLauncher };
}

/** Process groups started by this module, killed on an unexpected exit. */
const groups = new Set<number>();
process.once('exit', () => {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

async function stopGroup(child: ChildProcess, graceMs = 3000): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const exited = child.exitCode !== null || child.signalCode !== null;
  const gone = exited ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), graceMs).unref());
  if ((await Promise.race([gone.then(() => 'ok' as const), timer])) === 'late') {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    await gone;
  }
  // Children that outlived the leader (extension hosts) are in the same group.
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* none left */
  }
  groups.delete(pid);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Picks `label` in the open context menu: waits for the item, clicks it, and when the menu is still
 * open a moment later (a click that landed while the menu was still laying out on a busy machine)
 * presses Enter on the item, which the hover has highlighted.
 */
export async function pickContextMenu(page: Page, label: string): Promise<void> {
  const item = page.locator('.context-view .action-item', { hasText: label }).first();
  await item.waitFor({ state: 'visible', timeout: 10_000 });
  await item.hover();
  await item.click();
  await page.waitForTimeout(500);
  if (await item.isVisible().catch(() => false)) {
    await item.hover();
    await page.keyboard.press('Enter');
  }
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; then throws with `what`. */
export async function waitUntil<T>(fn: () => Promise<T> | T, what: string, timeoutMs = 20_000, everyMs = 200): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

/**
 * Installs the extension under test into `extensionsDir`: the `.vsix` named by COMMCOST_UI_VSIX
 * (`npm run package`) through code-server's --install-extension, else a copy of the freshly built
 * folder (package.json, dist/, media/, README.md, LICENSE) as `<publisher>.<name>-<version>/`.
 */
function installExtension(extensionsDir: string, userDataDir: string, env: NodeJS.ProcessEnv): void {
  const vsix = process.env.COMMCOST_UI_VSIX;
  if (vsix) {
    execFileSync(
      process.execPath,
      [CODE_SERVER_ENTRY, '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', resolve(vsix)],
      {
        env,
        stdio: 'pipe',
        timeout: 60_000,
      },
    );
    if (!readdirSync(extensionsDir).some((d) => d.startsWith(`${EXTENSION_ID}-`)))
      throw new Error(`${vsix} did not install into ${extensionsDir}`);
    return;
  }
  copyExtension(extensionsDir);
}

/** Copies the built extension (package.json, dist/, media/, README.md, LICENSE) as VS Code installs it. */
function copyExtension(extensionsDir: string): string {
  const dest = join(extensionsDir, `${EXTENSION_ID}-${pkg.version}`);
  mkdirSync(dest, { recursive: true });
  for (const f of ['package.json', 'README.md', 'LICENSE', 'media']) if (existsSync(join(REPO, f))) cpSync(join(REPO, f), join(dest, f), { recursive: true });
  cpSync(join(REPO, 'dist'), join(dest, 'dist'), {
    recursive: true,
    filter: (src) => !/\.map$/.test(src) && !/[/\\](cli|bench)\.js$/.test(src),
  });
  return dest;
}

/** How a session's VS Code is set up (defaults: workspace trust off, as the other scenarios need). */
export interface UiOptions {
  /** Workspace trust on: a folder opens in Restricted Mode until trusted (no startup prompt). */
  workspaceTrust?: boolean;
  /** User keybindings (keybindings.json entries), e.g. a key for a command the palette hides. */
  keybindings?: { key: string; command: string; args?: unknown }[];
}

/** One code-server + Chromium + sshd for a test file. */
export class UiSession {
  private constructor(
    readonly root: string,
    readonly home: string,
    readonly userDataDir: string,
    readonly ssh: SshServer,
    readonly port: number,
    private readonly codeServer: ChildProcess,
    private readonly codeServerLog: () => string,
    private readonly browser: Browser,
    readonly page: Page,
  ) {}

  /** Starts everything; on a failure, stops what was started and rethrows. */
  static async start(opts: UiOptions = {}): Promise<UiSession> {
    mkdirSync(OUT_DIR, { recursive: true });
    const root = await mkdtemp(join(tmpdir(), 'commcost-ui-'));
    const cleanups: (() => Promise<void> | void)[] = [() => rmSync(root, { recursive: true, force: true })];
    const undo = async () => {
      for (const c of cleanups.reverse()) await c();
    };
    try {
      const ssh = await startSshServer();
      cleanups.push(() => ssh.stop());
      // HOME of code-server (and so of the extension host): ~/.ssh/config with the alias, known_hosts.
      const home = join(root, 'home');
      mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
      writeFileSync(join(home, '.ssh', 'config'), readFileSync(ssh.sshConfigPath));
      writeFileSync(join(home, '.ssh', 'known_hosts'), readFileSync(ssh.knownHostsPath));
      const userDataDir = join(root, 'user-data');
      const extensionsDir = join(root, 'extensions');
      mkdirSync(join(userDataDir, 'User'), { recursive: true });
      writeFileSync(
        join(userDataDir, 'User', 'settings.json'),
        JSON.stringify(
          {
            'workbench.startupEditor': 'none',
            'workbench.tips.enabled': false,
            'workbench.welcomePage.walkthroughs.openOnInstall': false,
            ...(opts.workspaceTrust
              ? { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never', 'security.workspace.trust.banner': 'always' }
              : { 'security.workspace.trust.enabled': false }),
            'telemetry.telemetryLevel': 'off',
            'update.mode': 'none',
            'extensions.autoUpdate': false,
            'extensions.ignoreRecommendations': true,
            'window.restoreWindows': 'none',
            'editor.hover.delay': 150,
            'editor.minimap.enabled': false,
            'files.autoSave': 'off',
            'workbench.editor.enablePreview': false,
          },
          null,
          2,
        ),
      );
      if (opts.keybindings) writeFileSync(join(userDataDir, 'User', 'keybindings.json'), JSON.stringify(opts.keybindings, null, 2));
      const port = await freePort();
      let log = '';
      const xdg = join(root, 'xdg');
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        HOME: home,
        XDG_DATA_HOME: join(xdg, 'data'),
        XDG_CONFIG_HOME: join(xdg, 'config'),
        XDG_CACHE_HOME: join(xdg, 'cache'),
        SSH_AUTH_SOCK: '',
      };
      delete env.VSCODE_IPC_HOOK_CLI;
      installExtension(extensionsDir, userDataDir, env);
      writeFileSync(join(root, 'code-server.yaml'), 'auth: none\n');
      const codeServer = spawn(
        process.execPath,
        [
          CODE_SERVER_ENTRY,
          '--bind-addr',
          `127.0.0.1:${port}`,
          '--auth',
          'none',
          '--config',
          join(root, 'code-server.yaml'),
          '--user-data-dir',
          userDataDir,
          '--extensions-dir',
          extensionsDir,
          '--disable-telemetry',
          '--disable-update-check',
          ...(opts.workspaceTrust ? [] : ['--disable-workspace-trust']),
          '--disable-getting-started-override',
          '--ignore-last-opened',
        ],
        { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      if (codeServer.pid !== undefined) groups.add(codeServer.pid);
      codeServer.stdout?.on('data', (d: Buffer) => (log += d.toString()));
      codeServer.stderr?.on('data', (d: Buffer) => (log += d.toString()));
      cleanups.push(() => stopGroup(codeServer));
      await waitUntil(
        async () => {
          if (codeServer.exitCode !== null) throw new Error(`code-server exited with ${codeServer.exitCode}: ${log}`);
          const r = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
          return r?.ok;
        },
        `code-server on port ${port}`,
        30_000,
      );
      // playwright gives Chromium a fresh temporary profile of its own (removed on close).
      const { chromium } = loadPlaywright();
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-dev-shm-usage',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      cleanups.push(() => browser.close().catch(() => undefined));
      const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
      return new UiSession(root, home, userDataDir, ssh, port, codeServer, () => log, browser, page);
    } catch (e) {
      await undo();
      throw e;
    }
  }

  /** A fresh workspace folder under the session's temp root, with `files` (relative path → text). */
  workspace(name: string, files: Record<string, string>): string {
    const dir = join(this.root, 'ws', name);
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(dir, rel, '..'), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Opens `folder` in the browser window (a new window: fresh extension host) and waits for the workbench. */
  async openFolder(folder: string): Promise<void> {
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`, { waitUntil: 'domcontentloaded' });
    await this.page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout: 30_000 });
    await this.page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ state: 'visible', timeout: 30_000 });
  }

  /**
   * Runs a palette command by its full title ("commcost: Measure communicator rebuild"). Right
   * after a window opens the extension's contributions may not be registered yet: the palette is
   * closed and opened again until the command is listed (up to 30 s).
   */
  async command(title: string): Promise<void> {
    const page = this.page;
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
    const until = Date.now() + 30_000;
    for (;;) {
      await page
        .locator('.part.statusbar')
        .click({ position: { x: 5, y: 5 } })
        .catch(() => undefined);
      await page.keyboard.press('F1');
      await page.locator('.quick-input-widget .quick-input-box input').waitFor({ state: 'visible', timeout: 10_000 });
      await page.keyboard.type(title);
      try {
        await row.waitFor({ state: 'visible', timeout: 3_000 });
        break;
      } catch (e) {
        if (Date.now() > until) {
          await this.shot('failed-command');
          throw e;
        }
        await page.keyboard.press('Escape');
        await page.waitForTimeout(1_000);
      }
    }
    await page.keyboard.press('Enter');
  }

  /** Waits for a quick input titled `title`; returns its widget. */
  async quickInput(title: string | RegExp): Promise<Locator> {
    const widget = this.page.locator('.quick-input-widget', { hasText: title });
    await widget.waitFor({ state: 'visible', timeout: 15_000 });
    return widget;
  }

  /** In the open quick pick titled `title`, types `filter` and accepts the row whose label is `label`. */
  async pick(title: string | RegExp, label: string, filter = label): Promise<void> {
    const widget = await this.quickInput(title);
    await this.page.keyboard.type(filter);
    const row = widget.locator('.monaco-list-row.focused', { hasText: label });
    await row.waitFor({ state: 'visible', timeout: 10_000 });
    await this.page.keyboard.press('Enter');
  }

  /** Saves a screenshot to test-output/ui/<name>.png; returns its path. */
  async shot(name: string): Promise<string> {
    const path = join(OUT_DIR, `${name}.png`);
    await this.page.screenshot({ path });
    return path;
  }

  /**
   * A page of its own in the same Chromium (e.g. an HTML report opened from disk), `scheme` its
   * prefers-color-scheme; the caller closes it.
   */
  async extraPage(scheme: 'light' | 'dark'): Promise<Page & { close(): Promise<void> }> {
    return (await this.browser.newPage({ viewport: { width: 1200, height: 900 }, colorScheme: scheme })) as Page & { close(): Promise<void> };
  }

  /** A visible notification toast whose text matches. */
  toast(text: string | RegExp): Locator {
    return this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
  }

  /** The frame of the results webview (the one holding the panel app). */
  async resultsFrame(timeoutMs = 20_000): Promise<Frame> {
    return waitUntil(
      async () => {
        for (const f of this.page.frames()) {
          if (!/vscode-cdn|webview|vscode-resource|active-frame|index\.html/.test(f.url()) && !f.url().startsWith('vscode-webview'))
            continue;
          const ok = await f.evaluate<boolean>(`!!document.querySelector('h1') && !!document.querySelector('.status')`).catch(() => false);
          if (ok) return f;
        }
        return undefined;
      },
      'the results webview',
      timeoutMs,
    );
  }

  /** Stops Chromium, code-server (its whole process group) and sshd; keeps the logs under test-output/ui/logs. */
  async stop(): Promise<void> {
    await this.browser.close().catch(() => undefined);
    await stopGroup(this.codeServer);
    try {
      const logs = join(OUT_DIR, 'logs');
      rmSync(logs, { recursive: true, force: true });
      mkdirSync(logs, { recursive: true });
      writeFileSync(join(logs, 'code-server.log'), this.codeServerLog());
      const userLogs = join(this.userDataDir, 'logs');
      if (existsSync(userLogs)) for (const d of readdirSync(userLogs)) cpSync(join(userLogs, d), join(logs, d), { recursive: true });
    } catch {
      /* logs are a convenience */
    }
    await this.ssh.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}
