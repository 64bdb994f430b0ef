#!/usr/bin/env bash
# Builds the web console's assets into console/dist (committed: the API service embeds
# them, so `cargo build` needs no Node.js). Installs the locked dependencies (npm ci),
# type-checks (tsc --strict), lints (eslint) and bundles src/main.ts with esbuild.
# Run it after changing anything under console/src or console/static, and commit dist.
set -euo pipefail
cd "$(dirname "$0")/../console"

log() { echo "build-console: $*"; }

node_major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)"
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    echo "build-console: ERROR: Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
    exit 1
fi

# The end-to-end test's worker imports the TypeScript SDK from its build.
if [ ! -f ../sdk-typescript/dist/src/index.js ] || [ ! -d ../sdk-typescript/node_modules ] \
    || [ "${XDB_CONSOLE_REBUILD_SDK:-0}" = 1 ]; then
    log "building the TypeScript SDK (a dependency of the end-to-end test)"
    (cd ../sdk-typescript && npm ci --no-audit --no-fund --loglevel=error && rm -rf dist && npx tsc -p .)
fi
log "npm ci"
npm ci --no-audit --no-fund --loglevel=error
log "tsc"
rm -rf build
npx tsc -p .
log "eslint"
npx eslint --max-warnings=0 .
log "esbuild"
mkdir -p dist
npx esbuild src/main.ts --bundle --format=esm --target=es2022 --charset=utf8 \
    --legal-comments=none --log-level=warning --outfile=dist/app.js
cp static/index.html static/app.css dist/
log "done: $(wc -c < dist/app.js) bytes of app.js"
