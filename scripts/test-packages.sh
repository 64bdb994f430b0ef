#!/usr/bin/env bash
# The SDKs as a user gets them: builds the Python wheel and sdist and the npm tarball,
# installs each into an empty project from the artefact alone, and runs the READMEs'
# "From an empty folder" example (its files taken from the README as they stand, so the
# README cannot drift) against `xdb dev --ephemeral` on free ports.
#
# Needs Python 3.11+, Node.js 20+ and PyPI/npm for the packages' own dependencies.
# Environment: CARGO_TARGET_DIR (default ~/.cache/xdb-ci-target); XDB_DEV_CACHE_DIR
# (where xdb dev caches the PostgreSQL binaries; default outside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

log() { echo "test-packages: [${SECONDS}s] $*"; }
die() {
    echo "test-packages: ERROR: $*" >&2
    exit 1
}

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"
work="$(mktemp -d)"
dev_pid=""
cleanup() {
    if [ -n "$dev_pid" ]; then
        kill -INT "$dev_pid" 2>/dev/null || true
        wait "$dev_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The fenced block after `<!-- file: NAME -->` in README $1, written to $2/NAME.
readme_file() {
    python3 - "$1" "$2" "$3" <<'PY'
import pathlib, re, sys
readme, name, into = sys.argv[1], sys.argv[3], pathlib.Path(sys.argv[2])
text = pathlib.Path(readme).read_text()
match = re.search(r"<!-- file: " + re.escape(name) + r" -->\n```[a-z]*\n(.*?)\n```", text, re.S)
if not match:
    sys.exit(f"{readme} has no block marked <!-- file: {name} -->")
(into / name).write_text(match.group(1) + "\n")
PY
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
expect_hello() {
    grep -q 'COMPLETED' "$1" && grep -q 'hello, world' "$1" ||
        die "$2 did not complete the hello process; its output:$(printf '\n'; cat "$1")"
    log "  $2 printed: $(grep 'COMPLETED' "$1")"
}

log "building xdb"
scripts/cargo-build-bins.sh xdb-cli
xdb="$CARGO_TARGET_DIR/debug/xdb"

api_port="$(free_port)"
log "xdb dev --ephemeral on 127.0.0.1:$api_port"
: >"$work/xdb-dev.log"
"$xdb" dev --ephemeral --listen "127.0.0.1:$api_port" --async-listen "127.0.0.1:$(free_port)" \
    --worker-listen "127.0.0.1:$(free_port)" >"$work/xdb-dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 1 600); do
    grep -q '^Ctrl-C stops everything' "$work/xdb-dev.log" && break
    kill -0 "$dev_pid" 2>/dev/null || die "xdb dev exited: $(cat "$work/xdb-dev.log")"
    sleep 0.1
done
grep -q '^Ctrl-C stops everything' "$work/xdb-dev.log" || die "xdb dev not ready in 60 s: $(cat "$work/xdb-dev.log")"
export XDB_URL="http://127.0.0.1:$api_port"

log "Python: building the wheel and the sdist"
python3 -m venv "$work/build-venv"
"$work/build-venv/bin/pip" install --quiet --disable-pip-version-check build
"$work/build-venv/bin/python" -m build --outdir "$work/py-dist" sdk-python >"$work/build.log" 2>&1 ||
    die "python -m build failed: $(cat "$work/build.log")"
wheel="$(ls "$work"/py-dist/xdb_sdk-*.whl)" || die "no wheel built"
sdist="$(ls "$work"/py-dist/xdb_sdk-*.tar.gz)" || die "no sdist built"
for artefact in "$wheel" "$sdist"; do
    project="$work/py-$(basename "$artefact")"
    mkdir -p "$project"
    log "Python: $(basename "$artefact") into an empty project"
    python3 -m venv "$project/.venv"
    "$project/.venv/bin/pip" install --quiet --disable-pip-version-check "$artefact" uvicorn
    readme_file sdk-python/README.md "$project" hello.py
    (cd "$project" && WORKER_PORT="$(free_port)" timeout 120 .venv/bin/python hello.py) >"$project/out.txt" 2>&1 ||
        die "hello.py failed: $(cat "$project/out.txt")"
    expect_hello "$project/out.txt" "hello.py with $(basename "$artefact")"
done

log "TypeScript: building the package and the tarball"
(cd sdk-typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build &&
    npm pack --silent --pack-destination "$work" >/dev/null)
tarball="$(ls "$work"/xdb-sdk-*.tgz)" || die "no npm tarball packed"
project="$work/ts-hello"
mkdir -p "$project"
log "TypeScript: $(basename "$tarball") into an empty project"
(cd "$project" && echo '{"type": "module", "private": true}' >package.json &&
    npm install --no-audit --no-fund --loglevel=error "$tarball" typescript @types/node >/dev/null)
readme_file sdk-typescript/README.md "$project" tsconfig.json
readme_file sdk-typescript/README.md "$project" hello.ts
(cd "$project" && npx tsc && WORKER_PORT="$(free_port)" timeout 120 node dist/hello.js) >"$project/out.txt" 2>&1 ||
    die "hello.ts failed: $(cat "$project/out.txt")"
expect_hello "$project/out.txt" "hello.ts with $(basename "$tarball")"
cd "$repo"
log "done: wheel, sdist and npm tarball each installed and run against xdb dev"
