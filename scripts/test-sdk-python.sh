#!/usr/bin/env bash
# Runs the Python SDK's checks: ruff (lint and format), mypy --strict, and pytest — the
# unit tests, and the integration tests against xdb-server built from this repository on
# real PostgreSQL and MariaDB servers (installed and started if missing).
#
# Works from a clean clone: creates the virtualenv sdk-python/.venv (again whenever
# sdk-python/pyproject.toml changes), installs the SDK with its dev extras from PyPI,
# builds xdb-server and the Rust sample binaries (cargo decides what needs rebuilding),
# and builds the TypeScript SDK (`npm ci && npm run build` in sdk-typescript) when its
# build is missing or older than its sources: a cross-language test serves its sample
# worker with node, so Node.js 20 or newer is required.
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
readonly VENV="$SDK/.venv"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"

find_python() {
    local candidate
    for candidate in ${XDB_PYTHON:-} python3.13 python3.12 python3.11 python3; do
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# The virtualenv, rebuilt when the package's requirements change.
stamp="$(sha256sum "$SDK/pyproject.toml" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.xdb-stamp" 2>/dev/null)" != "$stamp" ]; then
    python="$(find_python)" || die "no Python 3.11 or newer found (set XDB_PYTHON)"
    log "creating $VENV with $("$python" --version)"
    rm -rf "$VENV"
    if ! "$python" -m venv "$VENV" 2>/dev/null; then
        # Debian's python3 needs its venv package for ensurepip.
        [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 ||
            die "$python cannot create a virtualenv; install python3-venv"
        log "installing python3-venv"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq python3-venv >/dev/null ||
            { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
        rm -rf "$VENV"
        "$python" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$SDK[dev]"
    echo "$stamp" >"$VENV/.xdb-stamp"
fi

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
cargo build --quiet -p xdb-server -p xdb-samples --bins
export XDB_SERVER_BIN="$CARGO_TARGET_DIR/debug/xdb-server"

log "pytest (unit, and integration on PostgreSQL and MariaDB)"
cd "$SDK"
exec .venv/bin/pytest -p no:cacheprovider "$@"
