#!/usr/bin/env bash
# The extension's test levels on a fresh machine (Node 20, Debian, root): installs VS Code's server
# build and Chromium when missing, builds, packages the .vsix, runs the extension-host mocha suite
# against the real gateway, then the browser test of the installed .vsix. Non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
step() { printf '\n=== %s ===\n' "$*"; }

step "VS Code server build and its Node (.tools/code-server-*, .tools/node-*)"
bash scripts/vscode-server-setup.sh || exit 1

step "package: npm run package (production build, vsce, size check)"
npm run --silent package || exit 1

step "build: extension (development) and the extension-host suite"
node scripts/build.mjs --tests || exit 1

step "extension host: mocha suite in VS Code's server build, real gateway"
timeout 600 node --import tsx test/extension/run-in-server.ts --no-build || status=1

step "extension host, untrusted workspace: restricted mode keeps the key, the agent and the index in"
timeout 300 node --import tsx test/extension/run-in-server.ts --no-build --untrusted || status=1

step "browser: the packaged .vsix installed into the server, driven with playwright-core"
timeout 420 node --import tsx test/extension/vsix-ui.ts || status=1

if [[ $status -eq 0 ]]; then echo "extension tests: all passed"; else echo "extension tests: FAILED"; fi
exit $status
