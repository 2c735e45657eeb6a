#!/usr/bin/env bash
# Builds what `make run` serves, in release mode: the client bundle (wasm,
# JS, CSS and assets in target/site) and the server binary — and says which.
#
# cargo-leptos regenerates the client bundle on every build, even when
# nothing changed (wasm-bindgen, wasm-opt, the JS minifier and Tailwind run
# each time: about 40 s on 2 cores). So the bundle's inputs are hashed into a
# stamp beside it; when the stamp matches, only the server is built
# (`cargo leptos build --server-only`, which cargo makes a no-op when the
# server did not change either). A failed or interrupted build leaves no
# stamp, so the next one rebuilds the client.
#
#   scripts/build-release.sh            build what changed
#   scripts/build-release.sh --client   rebuild the client bundle whatever the stamp says
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

say() { printf '\033[1m[build]\033[0m %s\n' "$*"; }

# site-root of [[workspace.metadata.leptos]] in Cargo.toml, relative to here.
site=target/site
stamp="$site/.client-inputs"
# What the bundle is made of: the client crates and what they share with the
# server (app/, frontend/, types/), the stylesheet and assets, the workspace
# manifest (profiles, leptos metadata) and lock files, and the tools.
# Tailwind reads class names from app/src only (style/tailwind.css).
inputs_hash() {
    {
        find app frontend types style public -type f -print0 | sort -z | xargs -0 sha256sum
        sha256sum Cargo.toml Cargo.lock package-lock.json
        rustc --version
        cargo leptos --version
        wasm-bindgen --version
    } | sha256sum | cut -c1-16
}

# The bundle's names carry their content hashes (`hash-files` in Cargo.toml),
# listed in hash.txt beside the server binary as `js: <hash>` lines (and
# `split:`/`manifest:` for the lazy routes' loader; the chunks are found
# through the manifest).
hashes="${CARGO_TARGET_DIR:-target}/release/hash.txt"
bundle_present() {
    [ -f "$hashes" ] || return 1
    local kind hash
    while IFS=': ' read -r kind hash; do
        case $kind in
            js | wasm | css) [ -f "$site/pkg/aics.$hash.$kind" ] || return 1 ;;
            # The lazy routes' chunk loader and its manifest (`--split`).
            split) [ -f "$site/pkg/__wasm_split.$hash.js" ] || return 1 ;;
            manifest) [ -f "$site/pkg/__wasm_split_manifest.$hash.json" ] || return 1 ;;
        esac
    done <"$hashes"
}

want=$(inputs_hash)
have=$(cat "$stamp" 2>/dev/null || true)
started=$SECONDS
if [ "${1:-}" != "--client" ] && [ "$want" = "$have" ] && bundle_present; then
    say "client bundle is up to date (inputs $want): building the server only"
    cargo leptos build --release --server-only
else
    if [ "${1:-}" = "--client" ]; then
        say "rebuilding the client bundle as asked, and the server"
    elif [ -z "$have" ] || ! bundle_present; then
        say "no client bundle yet: building it (wasm, CSS; a few minutes the first time) and the server"
    else
        say "client inputs changed ($have → $want): rebuilding the client bundle and the server"
    fi
    rm -f "$stamp"
    # --precompress writes a .br and a .gz beside every file of the site,
    # which server/src/assets.rs serves to browsers that accept them.
    # --split cuts the lazy routes (app/src/lazy_pages.rs) out of the main
    # wasm into chunks of their own (also hashed, also precompressed); a
    # build without it leaves the lazy pages' imports unresolved.
    cargo leptos build --release --precompress --split
    echo "$want" >"$stamp"
fi
say "built in $((SECONDS - started)) s"
