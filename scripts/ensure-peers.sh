#!/usr/bin/env bash
# Install the peers that `xdb-bench --peers` runs beside XDB, from the package registries,
# into $XDB_PEERS_HOME (default $HOME/.cache/xdb-peers):
#   restate   npm @restatedev/restate-server and the TypeScript endpoint of
#             bench/peers/restate (@restatedev/restate-sdk), compiled with tsc;
#   dbos      PyPI dbos in a venv, and bench/peers/dbos/app.py;
#   temporal  the temporal CLI (its dev server) built by `go install` through the Go
#             module proxy, PyPI temporalio in a venv, and bench/peers/temporal/app.py.
#
# Usage: scripts/ensure-peers.sh [restate] [dbos] [temporal]   (none: all three)
# Idempotent: a package step runs again only when its lock or requirements changed; the
# apps are copied (and the endpoint compiled) every time, which takes seconds. Needs
# node and npm, python3 with venv, and go (for temporal; its first build takes minutes).
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PEERS="$ROOT/bench/peers"
readonly HOME_DIR="${XDB_PEERS_HOME:-$HOME/.cache/xdb-peers}"
# The temporal CLI release whose module the Go proxy serves (dev server 1.29.1).
readonly TEMPORAL_CLI_VERSION=v1.5.1

log() { echo "ensure-peers: $*"; }
die() {
    echo "ensure-peers: ERROR: $*" >&2
    exit 1
}
need() { command -v "$1" >/dev/null || die "$1 is not installed ($2)"; }

# Runs "$@" unless $stamp holds $key already; then records $key.
once() {
    local stamp="$1" key="$2"
    shift 2
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
        return 0
    fi
    "$@"
    echo "$key" >"$stamp"
}

restate() {
    need node "apt-get install nodejs"
    need npm "apt-get install npm"
    local dir="$HOME_DIR/restate"
    mkdir -p "$dir"
    cp "$PEERS/restate/package.json" "$PEERS/restate/package-lock.json" \
        "$PEERS/restate/tsconfig.json" "$dir/"
    rm -rf "$dir/src" && cp -r "$PEERS/restate/src" "$dir/src"
    local key
    key="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
    once "$dir/.installed" "$key" \
        bash -c "cd '$dir' && npm ci --no-audit --no-fund --loglevel=error"
    (cd "$dir" && rm -rf dist && node_modules/.bin/tsc)
    log "restate: $("$dir/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server" --version 2>/dev/null | head -1), endpoint $dir/dist/service.js"
}

python_app() {
    local peer="$1" dir="$HOME_DIR/$1"
    need python3 "apt-get install python3 python3-venv"
    mkdir -p "$dir"
    cp "$PEERS/$peer/app.py" "$PEERS/$peer/requirements.txt" "$dir/"
    [ -x "$dir/venv/bin/python" ] || python3 -m venv "$dir/venv"
    local key
    key="$(sha256sum "$dir/requirements.txt" | cut -d' ' -f1)"
    once "$dir/.installed" "$key" \
        "$dir/venv/bin/pip" install --quiet --disable-pip-version-check -r "$dir/requirements.txt"
    log "$peer: $("$dir/venv/bin/pip" freeze 2>/dev/null | grep -iE "^(dbos|temporalio)==" | head -1), app $dir/app.py"
}

temporal() {
    need go "the Go toolchain"
    python_app temporal
    mkdir -p "$HOME_DIR/bin"
    # nice: the build takes minutes of both cores.
    once "$HOME_DIR/bin/.temporal-version" "$TEMPORAL_CLI_VERSION" \
        env GOBIN="$HOME_DIR/bin" GOFLAGS=-mod=mod nice -n 19 \
        go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
    [ -x "$HOME_DIR/bin/temporal" ] || die "the temporal CLI did not install"
    log "temporal: $("$HOME_DIR/bin/temporal" --version)"
}

main() {
    local peers=("$@")
    [ ${#peers[@]} -gt 0 ] || peers=(restate dbos temporal)
    for peer in "${peers[@]}"; do
        case "$peer" in
        restate) restate ;;
        dbos) python_app dbos ;;
        temporal) temporal ;;
        *) die "unknown peer $peer (restate, dbos, temporal)" ;;
        esac
    done
}

main "$@"
