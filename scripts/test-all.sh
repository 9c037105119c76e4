#!/usr/bin/env bash
# The one test command (`npm test`): installs what a fresh machine lacks, then runs every
# level but the bench — typecheck, lint (ESLint), import cycles and the doors between rooms,
# unit, gateway (real processes over HTTP), browser (headless Chromium), and the extension
# inside a real VS Code extension host.
# Ends with one line "N passed, N failed" summing every level.
set -uo pipefail
cd "$(dirname "$0")/.."
log_dir=$(mktemp -d)
failed_levels=()
total_pass=0
total_fail=0

step() { printf '\n==== %s ====\n' "$*"; }

count() { # add the pass/fail counts a level printed
  local file=$1 pass fail
  pass=$(grep -E '^(ℹ|#) pass [0-9]+' "$file" | awk '{s+=$3} END {print s+0}')
  fail=$(grep -E '^(ℹ|#) fail [0-9]+' "$file" | awk '{s+=$3} END {print s+0}')
  # mocha's own summary ("15 passing"), the extension harness's relay of it ("# passing 15"),
  # and the vsix browser test ("vsix browser test: passing 6, failing 0, ...")
  pass=$((pass + $(grep -oE '(^ *[0-9]+ passing|^# passing [0-9]+|vsix browser test: passing [0-9]+)' "$file" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')))
  fail=$((fail + $(grep -oE '(^ *[0-9]+ failing|^# failing [0-9]+|vsix browser test: passing [0-9]+, failing [0-9]+)' "$file" | grep -oE '[0-9]+$' | awk '{s+=$1} END {print s+0}')))
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
}

run_level() { # name, command...
  local name=$1
  shift
  step "$name"
  local file="$log_dir/$name.log"
  "$@" 2>&1 | tee "$file"
  local status=${PIPESTATUS[0]}
  count "$file"
  if [ "$status" -ne 0 ]; then failed_levels+=("$name (exit $status)"); fi
}

step "install"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund || { echo "npm ci failed"; exit 1; }
fi
if [ ! -x /usr/bin/chromium ] && { [ -d test/browser ] || [ -d test/extension ]; }; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "could not install chromium"
  else
    echo "chromium is missing and this user cannot apt-get install it"
  fi
fi

run_level typecheck npm run typecheck --silent
run_level lint npm run lint --silent
run_level cycles npm run cycles --silent
step build
npm run build --silent || { echo "build failed"; exit 1; }

mapfile -t unit < <(find test/unit -name '*.test.ts' | sort)
run_level unit node --import tsx --test --test-reporter=spec "${unit[@]}"

mapfile -t gateway < <(find test/gateway -name '*.test.ts' | sort)
run_level gateway node --import tsx --test --test-concurrency=2 --test-reporter=spec "${gateway[@]}"

if [ -d test/browser ]; then
  mapfile -t browser < <(find test/browser -name '*.test.ts' | sort)
  if [ ${#browser[@]} -gt 0 ]; then
    run_level browser node --import tsx --test --test-concurrency=1 --test-reporter=spec "${browser[@]}"
  fi
fi

if [ -f scripts/vscode-tests.sh ]; then
  run_level extension bash scripts/vscode-tests.sh
fi

step summary
if [ ${#failed_levels[@]} -gt 0 ]; then
  echo "failed levels: ${failed_levels[*]}"
  [ "$total_fail" -eq 0 ] && total_fail=1
fi
echo "tests: $total_pass passed, $total_fail failed"
[ ${#failed_levels[@]} -eq 0 ]
