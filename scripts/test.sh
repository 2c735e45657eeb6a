#!/usr/bin/env bash
# Runs every check aics has, in the order that fails fastest:
# formatting, clippy (server and wasm), every Rust test (SQLite and
# PostgreSQL), then the Playwright suite against a freshly built server.
# Any failing part fails the whole command.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

scripts/setup.sh test

if [ -x scripts/postgres.sh ]; then
    step "PostgreSQL"
    DATABASE_URL=$(scripts/postgres.sh | tail -n 1)
    export DATABASE_URL
    export AICS_TEST_POSTGRES_URL="$DATABASE_URL"
    echo "tests use $DATABASE_URL"
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (server, ssr)"
cargo clippy --workspace --exclude frontend --all-targets -- -D warnings

step "cargo clippy (server with the opt-in OpenTelemetry export)"
cargo clippy -p aics --features otel --all-targets -- -D warnings

step "cargo clippy (browser, hydrate, wasm32)"
cargo clippy -p frontend -p app --target wasm32-unknown-unknown --features app/hydrate -- -D warnings

step "Rust tests (cargo nextest)"
cargo nextest run --workspace --exclude frontend --no-fail-fast
cargo test --workspace --exclude frontend --doc

step "end-to-end tests (Playwright, Debian chromium)"
scripts/e2e.sh
