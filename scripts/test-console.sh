#!/usr/bin/env bash
# The web console's checks: fails if its generated wire types differ from
# xdb-protocol/openapi.json (scripts/generate-wire-types.sh --check); rebuilds its assets
# (scripts/build-console.sh: npm ci, tsc, eslint, esbuild) and fails if they differ from
# the committed console/dist (the API service embeds those, so a stale dist would ship an
# old console); runs its unit tests; then the end-to-end test in headless Chromium
# (Debian's `chromium`, driven by playwright-core) against the real xdb-server on a fresh
# PostgreSQL database, with a worker built with the TypeScript SDK. The test writes
# docs/console/*.png.
#
# Environment: CARGO_TARGET_DIR (default ~/.cache/xdb-ci-target), XDB_TEST_POSTGRES_URL,
# XDB_CHROMIUM (default /usr/bin/chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "test-console: [${SECONDS}s] $*"; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"
scripts/ensure-rust.sh
scripts/ensure-postgres.sh
if [ ! -x "${XDB_CHROMIUM:-/usr/bin/chromium}" ]; then
    log "installing Debian's chromium"
    # A fresh machine may have no package lists yet (the ensure-* scripts update them
    # only when they install something themselves).
    sudo_if_needed=""
    [ "$(id -u)" = 0 ] || sudo_if_needed="sudo"
    $sudo_if_needed apt-get update -q >/dev/null
    $sudo_if_needed apt-get install -y -q chromium >/dev/null
fi

log "wire types up to date (console/src/generated/)"
scripts/generate-wire-types.sh --check console
log "building the console"
XDB_CONSOLE_REBUILD_SDK=1 scripts/build-console.sh
if ! git diff --exit-code --stat -- console/dist; then
    echo "test-console: ERROR: console/dist is stale: run scripts/build-console.sh and commit console/dist" >&2
    exit 1
fi
if [ -n "$(git ls-files --others --exclude-standard -- console/dist)" ]; then
    echo "test-console: ERROR: console/dist has files not committed: commit them" >&2
    exit 1
fi

log "building xdb-server"
scripts/cargo-build-bins.sh xdb-server
export XDB_SERVER_BIN="$CARGO_TARGET_DIR/debug/xdb-server"

cd console
log "unit tests, then the browser test"
node --test --test-reporter=spec --test-timeout=240000 build/test/unit/ build/test/e2e/
log "done"
