#!/usr/bin/env bash
# Installs what aics needs and is missing, idempotently, and says what it did.
#
#   scripts/setup.sh run    what building and running the app needs
#   scripts/setup.sh test   that, plus what the tests need (chromium, PostgreSQL,
#                           Playwright, cargo-nextest)
#
# Everything comes from the package registries this kind of machine reaches
# (crates.io, npm, Debian); nothing downloads a prebuilt binary from elsewhere.
# cargo-leptos looks for tailwindcss, wasm-opt and wasm-bindgen on PATH before
# it tries to download them, so the Makefile puts node_modules/.bin on PATH.
set -euo pipefail

mode=${1:-run}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CARGO_LEPTOS_VERSION=0.3.10
# The wasm-bindgen CLI must match the crate pinned in Cargo.toml exactly.
WASM_BINDGEN_VERSION=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' Cargo.toml)

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

apt_updated=""
apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if [ -z "$apt_updated" ]; then
        say "apt-get update"
        $sudo apt-get update -qq
        apt_updated=1
    fi
    say "installing Debian packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# --- Rust: the wasm target, cargo-leptos, wasm-bindgen-cli -------------------
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "adding the rustup target wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
fi

if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    # 0.3.11 with --locked needs a newer rustc than this machine's 1.95.
    say "installing cargo-leptos $CARGO_LEPTOS_VERSION (compiles from source: 15-30 min on 2 cores, once)"
    cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
    # Without --locked: with it, a locked dependency is missing from the registry.
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 5 min, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# --- npm: Tailwind CSS and binaryen (wasm-opt) -------------------------------
if ! have npm; then
    apt_install nodejs npm
fi
if [ ! -x node_modules/.bin/tailwindcss ] || [ ! -x node_modules/.bin/wasm-opt ] \
    || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing npm packages (tailwindcss, binaryen)"
    npm ci --no-audit --no-fund --loglevel=error
fi

if [ "$mode" = "test" ]; then
    # --- Test tools: chromium, Playwright, PostgreSQL, nextest ---------------
    # A CJK font, so the Chinese scenarios render readably in screenshots.
    apt_install chromium fonts-wqy-microhei
    if [ ! -x end2end/node_modules/.bin/playwright ] \
        || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
        say "installing npm packages for end2end (@playwright/test; the browser is Debian's)"
        (cd end2end && npm ci --no-audit --no-fund --loglevel=error)
    fi
    if ! cargo nextest --version >/dev/null 2>&1; then
        say "installing cargo-nextest"
        cargo install cargo-nextest --locked
    fi
    if [ -x scripts/postgres.sh ]; then
        scripts/postgres.sh >/dev/null
    fi
fi

say "ready ($mode)"
