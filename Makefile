# The two commands of the README, and the ones developers use every day.
# node_modules/.bin comes first on PATH so cargo-leptos finds tailwindcss and
# wasm-opt from npm instead of trying to download them.
CARGO_HOME ?= $(HOME)/.cargo
export PATH := $(CURDIR)/node_modules/.bin:$(CARGO_HOME)/bin:$(PATH)

.PHONY: run test watch build e2e bench-engine fmt lint

# Where cargo puts the server binary (CARGO_TARGET_DIR moves it; the client
# bundle stays in target/site, the site-root of Cargo.toml).
BIN := $(or $(CARGO_TARGET_DIR),target)/release/aics

## Install what is missing, build what changed in release mode, and serve on 127.0.0.1:3000.
run:
	@scripts/setup.sh run
	@scripts/build-release.sh
	@printf '\033[1m[run]\033[0m starting %s\n' "$(BIN)"
	@$(BIN)

## Install what is missing and run every check and test.
test:
	scripts/test.sh

## Rebuild and reload on every change (port 3000, reload port 3001).
watch:
	scripts/setup.sh run
	cargo leptos watch --split

## Build what changed in release mode (the client bundle only when its inputs changed).
build:
	scripts/build-release.sh

e2e:
	scripts/e2e.sh

bench-engine:
	scripts/bench-engine

fmt:
	cargo fmt --all

lint:
	cargo clippy --workspace --exclude frontend --all-targets -- -D warnings
	cargo clippy -p frontend -p app --target wasm32-unknown-unknown --features app/hydrate -- -D warnings
