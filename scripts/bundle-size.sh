#!/usr/bin/env bash
# Prints the client bundle's sizes as the release build left it in
# target/site/pkg (scripts/build-release.sh): every file raw, brotli and gzip
# (the precompressed copies the server sends), what the console's first load
# fetches, and what each lazy route (app/src/lazy_pages.rs) adds when it is
# first shown (its chunks, from the split manifest).
#
#   scripts/bundle-size.sh            the table and the totals
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pkg="${BUNDLE_PKG:-$root/target/site/pkg}"
[ -d "$pkg" ] || { echo "no $pkg: run scripts/build-release.sh first" >&2; exit 1; }

python3 - "$pkg" <<'PY'
import json, os, re, sys

pkg = sys.argv[1]
files = sorted(
    f for f in os.listdir(pkg)
    if not f.endswith((".br", ".gz", ".ts")) and os.path.isfile(os.path.join(pkg, f))
)

def size(name):
    path = os.path.join(pkg, name)
    return tuple(os.path.getsize(p) if os.path.exists(p) else os.path.getsize(path)
                 for p in (path, path + ".br", path + ".gz"))

def row(label, s):
    print(f"{s[0]:>10,} {s[1]:>9,} {s[2]:>9,}  {label}")

def total(names):
    return tuple(sum(size(n)[i] for n in names) for i in range(3))

print(f"{'raw':>10} {'br':>9} {'gz':>9}  file")
for f in sorted(files, key=lambda f: -size(f)[0]):
    row(f, size(f))

# The console's first load: the main JS (which imports the chunk loader),
# the main wasm and the stylesheet. The page itself is not counted.
main = [f for f in files if f.startswith("aics.") and f.endswith((".js", ".wasm", ".css"))]
main += [f for f in files if f.startswith("__wasm_split.") and f.endswith(".js")]
print()
print("console's first load (main js + wasm + css + chunk loader):")
for f in main:
    row(f, size(f))
row("total", total(main))

manifests = [f for f in files if f.startswith("__wasm_split_manifest")]
if manifests:
    manifest = json.load(open(os.path.join(pkg, manifests[0])))
    print()
    print("each lazy route or part, when first shown (its chunks; shared ones counted in each):")
    for key, chunks in sorted(manifest.items()):
        # `#[lazy_route]`'s keys end in a hash; components::lazy's are the name.
        name = re.sub(r"_[0-9]+$", "", key.strip("_"))
        row(name, total([c + ".wasm" for c in chunks]))
PY
