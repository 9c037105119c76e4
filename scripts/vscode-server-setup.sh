#!/usr/bin/env bash
# Installs VS Code's server build (from code-server@4.100.3) into .tools/, offline-capable after the
# npm registry and Debian apt. Idempotent: every step is skipped when its result already exists.
# Recipe: docs in /work/shared/TESTING.md "A real VS Code here, offline".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools/vscode-server"
CODE_SERVER_VERSION="4.100.3"
VSCODE="$TOOLS/node_modules/code-server/lib/vscode"
DONE_MARK="$TOOLS/.setup-complete-$CODE_SERVER_VERSION"

log() { printf '[vscode-server-setup] %s\n' "$*" >&2; }

if [[ -f "$DONE_MARK" && -f "$VSCODE/out/server-main.js" && -x /usr/bin/chromium ]]; then
  log "already set up at $VSCODE"
  exit 0
fi

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [[ "$node_major" != "20" ]]; then
  log "code-server@$CODE_SERVER_VERSION needs Node 20 exactly; found $(node -v)"
  exit 1
fi

missing=()
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if (( ${#missing[@]} )); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [[ "$(id -u)" == 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p "$TOOLS"
if [[ ! -f "$TOOLS/node_modules/code-server/package.json" ]]; then
  log "npm install code-server@$CODE_SERVER_VERSION"
  [[ -f "$TOOLS/package.json" ]] || echo '{"name":"aihub-vscode-server-tools","private":true}' > "$TOOLS/package.json"
  (cd "$TOOLS" && npm_config_unsafe_perm=true npm install --ignore-scripts --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION")
fi

cd "$VSCODE"
if [[ ! -f "$VSCODE/.aihub-deps-installed" ]]; then
  log "npm install (vscode server dependencies)"
  npm install --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error
  touch "$VSCODE/.aihub-deps-installed"
fi

mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg

if [[ ! -f "$VSCODE/.aihub-rebuilt" ]]; then
  log "npm rebuild (native modules)"
  npm_config_yes=true npm rebuild --loglevel=error
  touch "$VSCODE/.aihub-rebuilt"
fi

ln -sfn node_modules node_modules.asar

if [[ ! -f "$VSCODE/.aihub-extensions-installed" ]]; then
  log "npm install (built-in extensions)"
  (cd extensions && npm install --omit=dev --no-audit --no-fund --loglevel=error)
  touch "$VSCODE/.aihub-extensions-installed"
fi

touch "$DONE_MARK"
log "ready: $VSCODE/out/server-main.js"
