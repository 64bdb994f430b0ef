#!/usr/bin/env bash
# Runs the Python SDK's checks: ruff (lint and format), mypy --strict, and pytest — the
# unit tests, and the integration tests against xdb-server built from this repository on
# real PostgreSQL and MariaDB servers (installed and started if missing).
#
# Works from a clean clone: creates the virtualenv sdk-python/.venv (again whenever
# sdk-python/pyproject.toml changes, scripts/ensure-sdk-python-venv.sh), installs the SDK
# with its dev extras from PyPI, checks that its generated wire types match
# xdb-protocol/openapi.json (scripts/generate-wire-types.sh --check), builds xdb-server
# and the Rust sample binaries (cargo decides what needs rebuilding), and builds the
# TypeScript SDK (`npm ci && npm run build` in sdk-typescript) when its build is missing
# or older than its sources: a cross-language test serves its sample worker with node,
# so Node.js 20 or newer is required.
# Extra arguments go to pytest, e.g. `scripts/test-sdk-python.sh -k signup`.
# Environment: CARGO_TARGET_DIR (default ~/.cache/xdb-ci-target), XDB_PYTHON (the
# interpreter to build the virtualenv with; default the newest python3.x >= 3.11 found).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "test-sdk-python: $*"; }
die() {
    echo "test-sdk-python: ERROR: $*" >&2
    exit 1
}

readonly SDK=sdk-python
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"

scripts/ensure-sdk-python-venv.sh
log "wire types up to date (sdk-python/src/xdb/_wire.py)"
scripts/generate-wire-types.sh --check python

log "ruff check"
(cd "$SDK" && .venv/bin/ruff check src samples tests)
log "ruff format --check"
(cd "$SDK" && .venv/bin/ruff format --check src samples tests)
log "mypy --strict"
(cd "$SDK" && .venv/bin/mypy)

# The TypeScript sample worker (sdk-typescript/dist/samples/worker-main.js), which the
# Python client drives in a cross-language test. scripts/test-sdk-typescript.sh builds it
# too, with that SDK's own checks; here it is only built when missing or stale.
readonly TS=sdk-typescript
node_major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)"
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    die "Node.js 20 or newer is required: the cross-language test runs the TypeScript SDK's" \
        "sample worker (found: $(node --version 2>/dev/null || echo none))"
fi
if [ ! -f "$TS/node_modules/.package-lock.json" ] ||
    [ "$TS/package-lock.json" -nt "$TS/node_modules/.package-lock.json" ]; then
    log "npm ci in $TS (its dependencies are missing or older than package-lock.json)"
    (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error)
fi
ts_main="$TS/dist/samples/worker-main.js"
if [ ! -f "$ts_main" ] || [ -n "$(find "$TS/src" "$TS/samples" "$TS/package.json" \
    "$TS/package-lock.json" "$TS/tsconfig.json" -newer "$ts_main" -print -quit)" ]; then
    log "npm run build in $TS (its build is missing or older than its sources)"
    (cd "$TS" && npm run build --silent)
fi

# What the integration tests run against.
scripts/ensure-rust.sh
scripts/ensure-postgres.sh
scripts/ensure-mariadb.sh
log "building xdb-server and the Rust samples (the cross-language tests run them)"
scripts/cargo-build-bins.sh xdb-server xdb-samples
export XDB_SERVER_BIN="$CARGO_TARGET_DIR/debug/xdb-server"

log "pytest (unit, and integration on PostgreSQL and MariaDB)"
cd "$SDK"
exec .venv/bin/pytest -p no:cacheprovider "$@"
