#!/usr/bin/env bash
# Builds the app in release mode (what `make run` serves), starts it on a
# fresh SQLite database in a temporary folder, runs the Playwright suite
# against it, and stops the server by its PID.
#
#   scripts/e2e.sh                    build what changed, run every spec
#   scripts/e2e.sh tests/x.spec.ts    build what changed, run those specs
#   AICS_E2E_SKIP_BUILD=1 scripts/e2e.sh …   use the binary and bundle as built
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if [ -z "${AICS_E2E_SKIP_BUILD:-}" ]; then
    scripts/build-release.sh
fi

port=${AICS_E2E_PORT:-3400}
workdir=$(mktemp -d)
log="$workdir/server.log"
export AICS_ADDR="127.0.0.1:$port"
export AICS_DATABASE_URL="sqlite://$workdir/aics.sqlite"
export AICS_SUPERVISOR_PASSWORD=supervisor-e2e
export AICS_AGENT_PASSWORD=agent-e2e
export AICS_DEMO_FAULTS=1
export AICS_DEMO_TOKEN_DELAY_MS=${AICS_DEMO_TOKEN_DELAY_MS:-25}
export LEPTOS_SITE_ADDR="$AICS_ADDR"
export AICS_RECOVERY_SWEEP_SECS=1
# The first throttled sign-in of a name locks it (for 15 minutes) rather
# than backing off for one second, so security.spec.ts's lockout test sees
# the same refusal on the form and on the API however slow the run is.
export AICS_SIGN_IN_LOCK_AFTER=6
# The approval policy of end2end/tests/approval-policy.spec.ts: refund
# tickets of ORD-1031 get a 4 s deadline; the default rules stay.
export AICS_CONFIG="$workdir/aics.toml"
cat >"$AICS_CONFIG" <<'TOML'
[[approvals.rules]]
name = "e2e-refund-deadline"
tool = "ticket_create"
when = "category == refund and order_id == ORD-1031"
reason = "refunds are reviewed by a supervisor"
timeout = "4s"
on-timeout = "reject"
timeout-reason = "no supervisor decided within 4 seconds"

[[approvals.rules]]
name = "sensitive-ticket"
tool = "ticket_create"
when = "category in [complaint, refund]"
reason = "complaint and refund tickets are reviewed by a supervisor"

[[approvals.rules]]
name = "ticket-intent-mismatch"
tool = "ticket_create"
when = "$customer in [complaint, refund] and category not in [complaint, refund]"
reason = "the customer's words read as a complaint or a refund request, but the ticket is filed under another category"
TOML

# The binary lives where cargo put it (CARGO_TARGET_DIR when it is set).
"${CARGO_TARGET_DIR:-target}/release/aics" >"$log" 2>&1 &
server_pid=$!
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}
# The server's files (database, log, config) go once the tests pass; a
# failed run keeps them to look at.
finish() {
    stop_server
    if [ "${status:-1}" -eq 0 ]; then
        rm -rf "$workdir"
    else
        echo "the server's database and log: $workdir"
    fi
}
trap finish EXIT

for _ in $(seq 1 120); do
    if curl -fsS "http://$AICS_ADDR/healthz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "the server exited before it served:"; cat "$log"; exit 1
    fi
    sleep 0.5
done
curl -fsS "http://$AICS_ADDR/healthz" >/dev/null || { echo "server did not answer:"; cat "$log"; exit 1; }

status=0
(cd end2end && AICS_BASE_URL="http://$AICS_ADDR" npx playwright test "$@") || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- server log (last 80 lines) ---"; tail -n 80 "$log"
fi
exit "$status"
