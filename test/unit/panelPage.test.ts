// The panels' page (extension/panelPage.ts): the webview bundle inlined under the nonce, no script
// loaded by URL (a URL goes through VS Code's webview service worker, which a page restored beside
// another after a reload can miss: the page then stays blank), the bundle read once and re-read
// after a rebuild, a clear error when it is missing.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { panelPageHtml, webviewScript, WebviewBundleError } from '../../extension/panelPage';

const ext = mkdtempSync(join(tmpdir(), 'commcost-panelpage-'));
mkdirSync(join(ext, 'dist'));
const bundle = join(ext, 'dist', 'webview.js');
after(() => rmSync(ext, { recursive: true, force: true }));

test('the bundle is inlined under the nonce; no script is loaded by URL', () => {
  writeFileSync(bundle, 'window.x = "</script><!--";\n//# sourceMappingURL=webview.js.map\n');
  const html = panelPageHtml({
    cspSource: 'https://res.example',
    script: webviewScript(ext),
    state: { kind: 'compare', paths: ['/srv/runs/a.json', '/srv/runs/b.json'] },
    embedded: { id: 'commcost-compare', json: '{"runs":[]}' },
  });
  const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.equal(scripts.length, 2, 'the data element and the bundle');
  assert.ok(!/<script[^>]*\ssrc=/.test(html), 'no <script src>');
  const nonce = /script-src 'nonce-([^']+)'/.exec(html)?.[1];
  assert.ok(nonce, 'the CSP allows scripts by nonce only');
  assert.doesNotMatch(/script-src [^;"]*/.exec(html)![0], /https:|vscode-|\*/, 'and from no origin');
  const [, attrs = '', code] = scripts[1]!;
  assert.equal(attrs.trim(), `nonce="${nonce}"`);
  assert.equal(code, 'window.x = "<\\/script><\\!--";\n', 'inline-safe, without the source map comment');
  assert.match(scripts[0]![1] ?? '', /type="application\/json" id="commcost-compare"/);
  assert.match(html, /<body data-commcost-state="\{&#34;kind&#34;:&#34;compare&#34;/);
  // A fresh nonce per page.
  assert.notEqual(/nonce-([^']+)/.exec(panelPageHtml({ cspSource: 'x', script: '' }))![1], nonce);
});

test('the bundle is read once, and again after a rebuild', () => {
  writeFileSync(bundle, 'one();');
  utimesSync(bundle, new Date(1_000_000), new Date(1_000_000));
  assert.equal(webviewScript(ext), 'one();');
  writeFileSync(bundle, 'two();');
  utimesSync(bundle, new Date(1_000_000), new Date(1_000_000)); // same mtime and size: the kept copy
  assert.equal(webviewScript(ext), 'one();');
  writeFileSync(bundle, 'three();');
  assert.equal(webviewScript(ext), 'three();');
});

test('a missing bundle is a clear error: which file, what to do', () => {
  const empty = mkdtempSync(join(tmpdir(), 'commcost-panelpage-none-'));
  try {
    assert.throws(
      () => webviewScript(empty),
      (e: unknown) => e instanceof WebviewBundleError && e.message.includes(join(empty, 'dist', 'webview.js')) && /reinstall/.test(e.message),
    );
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
