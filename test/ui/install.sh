#!/usr/bin/env bash
# Installs what the real-VS-Code UI tests drive into a test-only cache, outside the project's
# dependencies: code-server 4.100.3 (runs on Node 20: toolchain.md, "VS Code for end-to-end UI
# tests", Route B) and playwright-core (drives /usr/bin/chromium). Idempotent: a complete install
# is reused. Cache: $COMMCOST_UI_CACHE, default ~/.cache/commcost-ui (test/ui/uiEnv.ts reads the same).
# Needs: npm, the libkrb5 headers (kerberos builds from source), Debian's ripgrep (its rg is used
# instead of the download @vscode/ripgrep would make), chromium. .ci/run installs those with apt.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_VERSION=1.65.1
RIPGREP_CACHE=vscode-ripgrep-cache-1.15.11
RIPGREP_TARBALL=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz

cache="${COMMCOST_UI_CACHE:-$HOME/.cache/commcost-ui}"
dir="$cache/code-server-$CODE_SERVER_VERSION"
stamp="$dir/.installed-$CODE_SERVER_VERSION-playwright-$PLAYWRIGHT_VERSION"

if [ -f "$stamp" ] && [ -f "$dir/node_modules/code-server/out/node/entry.js" ]; then
  echo "ui: code-server $CODE_SERVER_VERSION and playwright-core $PLAYWRIGHT_VERSION already in $dir"
  exit 0
fi

missing=()
[ -f /usr/include/gssapi/gssapi.h ] || missing+=("libkrb5-dev (the kerberos module builds against gssapi.h)")
command -v rg >/dev/null || missing+=("ripgrep (its rg stands in for the download of @vscode/ripgrep)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'ui: install first: %s\n' "${missing[@]}" >&2
  exit 2
fi

rm -rf "$dir"
mkdir -p "$dir"
# @vscode/ripgrep's postinstall looks for its tarball in $TMPDIR/<cache> before downloading it
# from GitHub: pre-seed it with Debian's rg.
tmp="$dir/.tmp"
mkdir -p "$tmp/$RIPGREP_CACHE" "$tmp/rg"
cp "$(command -v rg)" "$tmp/rg/rg"
tar -C "$tmp/rg" -czf "$tmp/$RIPGREP_CACHE/$RIPGREP_TARBALL" rg

printf '{ "name": "commcost-ui-cache", "private": true }\n' > "$dir/package.json"
echo "ui: installing code-server $CODE_SERVER_VERSION and playwright-core $PLAYWRIGHT_VERSION into $dir"
start=$(date +%s)
(
  cd "$dir"
  TMPDIR="$tmp" npm_config_unsafe_perm=true npm_config_yes=true \
    npm install --no-audit --no-fund --no-save --foreground-scripts --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" > "$dir/install.log" 2>&1
) || { echo "ui: npm install failed; last lines of $dir/install.log:" >&2; tail -n 40 "$dir/install.log" >&2; exit 1; }
rm -rf "$tmp"
touch "$stamp"
echo "ui: installed in $(( $(date +%s) - start )) s"
