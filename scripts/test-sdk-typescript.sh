#!/usr/bin/env bash
# The TypeScript SDK's checks, from a fresh clone: installs the locked dependencies (npm
# ci), checks that its generated wire types match xdb-protocol/openapi.json
# (scripts/generate-wire-types.sh --check), type-checks (tsc --strict), lints (eslint with
# typescript-eslint), and runs the unit tests and the integration tests, which start the
# real xdb-server built from this repository against fresh databases on PostgreSQL and
# MariaDB (each test file its own database, server and ports). Builds xdb-server first
# (cargo is incremental, so this is quick when nothing changed) and starts both database
# servers if needed.
#
# Environment: CARGO_TARGET_DIR (default ~/.cache/xdb-ci-target), XDB_TEST_POSTGRES_URL,
# XDB_TEST_MYSQL_URL (the servers' admin URLs, as for the Rust integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "test-sdk-typescript: [${SECONDS}s] $*"; }

node_major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)"
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    echo "test-sdk-typescript: ERROR: Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
    exit 1
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"
scripts/ensure-rust.sh
scripts/ensure-postgres.sh
scripts/ensure-mariadb.sh
log "building xdb-server"
scripts/cargo-build-bins.sh xdb-server
export XDB_SERVER_BIN="$CARGO_TARGET_DIR/debug/xdb-server"

cd sdk-typescript
log "npm ci"
npm ci --no-audit --no-fund --loglevel=error
log "wire types up to date (src/generated/)"
../scripts/generate-wire-types.sh --check typescript
log "tsc"
rm -rf dist # no test compiled from a file that is gone
npx tsc -p .
log "eslint"
npx eslint --max-warnings=0 .
log "tests (unit, then integration on PostgreSQL and MariaDB)"
node --test --test-reporter=spec --test-timeout=180000 dist/test/unit/ dist/test/integration/
log "done"
