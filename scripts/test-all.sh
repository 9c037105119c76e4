#!/usr/bin/env bash
# The one test command (`npm test`): installs what a fresh machine lacks, then runs every
# level but the bench — typecheck, lint (ESLint), import cycles and the doors between rooms,
# unit, gateway (real processes over HTTP), agents (the real Claude Code, Codex CLI and
# opencode binaries against a real gateway), browser (headless Chromium), and the extension
# inside a real VS Code extension host. The gateway level runs twice: on the JSON-file store,
# then on a throwaway PostgreSQL cluster (Debian's postgresql, test/support/postgres.ts).
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

# The agents level traces each agent's network calls with strace (test/agents/run.ts).
if ! command -v strace >/dev/null 2>&1 && [ -d test/agents ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null) || echo "could not install strace"
  else
    echo "strace is missing and this user cannot apt-get install it: the agents' network is not checked"
  fi
fi

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) || echo "could not install postgresql"
  else
    echo "postgresql is missing and this user cannot apt-get install it"
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

# The coding agents as users run them (npm devDependencies, non-interactive), one at a time:
# each run is a native binary of a few hundred MB and a real gateway (test/agents/suite.ts).
mapfile -t agents < <(find test/agents -name '*.test.ts' | sort)
run_level agents node --import tsx --test --test-concurrency=1 --test-reporter=spec "${agents[@]}"

# The gateway suites again, each gateway's store in a fresh database of one cluster for the
# run (test/gateway/helpers.ts reads AIHUB_TEST_DATABASE_URL). Left out: the suites that start
# their own clusters (postgres-*, already PostgreSQL) and the ones about the JSON-file store's
# files on disk, which a database does not have: store-upgrade (old data dir layouts),
# payments-prune and report-beside-chat (both seed a data dir before the start), disk-full (the
# data dir's disk). encryption runs here: its rotate-key
# gets the database's --database-url (helpers.ts storeArgs) and skips its legacy-data-dir case.
# AIHUB_TEST_POSTGRES=skip leaves the pass out (it says so); about 7 minutes here.
postgres_pass=${AIHUB_TEST_POSTGRES:-run}
postgres_skip_reason="AIHUB_TEST_POSTGRES=$postgres_pass"
json_file_only='(postgres-|store-upgrade|payments-prune|report-beside-chat|report-csv-stream|disk-full)'
if [ "$postgres_pass" = run ]; then
  step "postgres cluster"
  pg_out="$log_dir/postgres.json"
  node --import tsx test/support/postgres-main.ts >"$pg_out" 2>"$log_dir/postgres.err" &
  pg_pid=$!
  trap 'kill "$pg_pid" 2>/dev/null; wait "$pg_pid" 2>/dev/null' EXIT
  for _ in $(seq 1 900); do # up to 3 minutes (an apt-get install may run first)
    [ -s "$pg_out" ] && break
    kill -0 "$pg_pid" 2>/dev/null || break
    sleep 0.2
  done
  pg_url=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).url)' "$pg_out" 2>/dev/null)
  if [ -n "$pg_url" ]; then
    echo "cluster: $pg_url"
    mapfile -t gateway_pg < <(find test/gateway -name '*.test.ts' | grep -vE "/$json_file_only" | sort)
    AIHUB_TEST_DATABASE_URL=$pg_url run_level gateway-postgres node --import tsx --test --test-concurrency=2 --test-reporter=spec "${gateway_pg[@]}"
  else
    echo "the PostgreSQL cluster did not start:"
    cat "$log_dir/postgres.err"
    failed_levels+=("gateway-postgres (no cluster)")
  fi
  kill "$pg_pid" 2>/dev/null
  wait "$pg_pid" 2>/dev/null
  trap - EXIT
else
  step "gateway-postgres"
  echo "SKIPPED: the gateway suites on PostgreSQL did not run: $postgres_skip_reason"
fi

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
