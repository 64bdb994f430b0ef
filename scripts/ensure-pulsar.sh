#!/usr/bin/env bash
# Makes Pulsar CDC mode runnable on this machine, for the tests, the bench and local runs:
#   - Apache Pulsar standalone (broker, bookie, metadata store and the Pulsar IO functions
#     worker in one JVM) and the official Debezium connectors (pulsar-io-debezium-postgres
#     and -mysql), resolved by Maven from Maven Central (pulsar-io/standalone/pom.xml)
#     into a cache outside the clone;
#   - the databases configured for Debezium (scripts/ensure-cdc-databases.sh);
#   - the standalone started in the background with pulsar-io/standalone/standalone.conf,
#     unless its admin API already answers healthy.
# Idempotent, and quick when everything runs already; a broker it starts begins with no
# data (topics, subscriptions and sources of an earlier one are gone). Ready means: the broker's health
# check passes and the functions worker lists both Debezium connectors.
# Environment (not XDB_PULSAR_*, which the services read as pulsar.* settings):
# XDB_STANDALONE_PULSAR_CACHE (default ~/.cache/xdb-pulsar: jars and connectors),
# XDB_STANDALONE_PULSAR_STATE (default /tmp/xdb-pulsar: data, logs),
# XDB_STANDALONE_PULSAR_HEAP (default 1g), XDB_STANDALONE_PULSAR_WAIT_SECONDS (180).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly REPO="$PWD"
readonly CONF="$REPO/pulsar-io/standalone"
readonly VERSION="$(sed -n 's:.*<pulsar.version>\(.*\)</pulsar.version>.*:\1:p' "$CONF/pom.xml")"
readonly CACHE="${XDB_STANDALONE_PULSAR_CACHE:-$HOME/.cache/xdb-pulsar}/$VERSION"
readonly STATE="${XDB_STANDALONE_PULSAR_STATE:-/tmp/xdb-pulsar}"
readonly ADMIN=http://127.0.0.1:8080
readonly BROKER=127.0.0.1:6650
readonly WAIT_SECONDS="${XDB_STANDALONE_PULSAR_WAIT_SECONDS:-180}"
readonly LOG="$STATE/standalone.log"

log() { echo "ensure-pulsar: $*"; }
die() {
    echo "ensure-pulsar: ERROR: $*" >&2
    exit 1
}

apt_install() {
    [ "$(id -u)" -eq 0 ] || die "installing $* needs root"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$@" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
}

# The broker's own health check: it writes and reads a message through the bookie.
healthy() { [ "$(curl -sf -m 5 "$ADMIN/admin/v2/brokers/health" 2>/dev/null)" = ok ]; }
# The functions worker has loaded both connector archives and leads (until then it
# refuses new sources: "Leader not yet ready").
connectors_ready() {
    local listed
    listed="$(curl -sf -m 5 "$ADMIN/admin/v3/sources/builtinsources" 2>/dev/null)" || return 1
    [[ "$listed" == *'"debezium-postgres"'* && "$listed" == *'"debezium-mysql"'* ]] &&
        [ "$(curl -sf -m 5 "$ADMIN/admin/v2/worker/cluster/leader/ready" 2>/dev/null)" = true ]
}
# A standalone answers healthy before it has created its default namespace.
namespace_ready() {
    [[ "$(curl -sf -m 5 "$ADMIN/admin/v2/namespaces/public" 2>/dev/null)" == *'"public/default"'* ]]
}
ready() { healthy && namespace_ready && connectors_ready; }

[ -n "$VERSION" ] || die "no <pulsar.version> in $CONF/pom.xml"
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1 || true)"
if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then
    log "installing a Java 17 runtime for Pulsar"
    apt_install openjdk-17-jre-headless
fi
command -v mvn >/dev/null 2>&1 || {
    log "installing Maven"
    apt_install maven
}
command -v curl >/dev/null 2>&1 || apt_install curl

# Resolved once per Pulsar version and pom: the marker holds the pom's checksum.
readonly POM_SUM="$(sha256sum "$CONF/pom.xml" | cut -d' ' -f1)"
if [ "$(cat "$CACHE/.resolved" 2>/dev/null)" != "$POM_SUM" ]; then
    log "resolving Apache Pulsar $VERSION and its Debezium connectors from Maven Central into $CACHE"
    rm -rf "$CACHE"
    mkdir -p "$CACHE"
    (cd "$CONF" && mvn -B -q -s maven-settings.xml package \
        -Dxdb.lib.dir="$CACHE/lib" -Dxdb.connectors.dir="$CACHE/connectors" \
) >"$CACHE/maven.log" 2>&1 || {
        tail -n 30 "$CACHE/maven.log" >&2
        die "Maven could not resolve Pulsar $VERSION (log: $CACHE/maven.log)"
    }
    rm -rf "$CONF/target"
    echo "$POM_SUM" >"$CACHE/.resolved"
fi

scripts/ensure-cdc-databases.sh

start_standalone() {
    # A fresh broker each start: the data of an earlier one holds the sources of test
    # databases that are gone (a run that was killed never removed them), which would
    # start again and retry their connections for ever.
    rm -rf "$STATE/data"
    mkdir -p "$STATE"
    log "starting Pulsar $VERSION standalone (admin $ADMIN, broker pulsar://$BROKER, log: $LOG)"
    # Every descriptor redirected on the subshell: a process left holding the caller's
    # stdout would keep a pipe reading this script's output (CI's log) open forever.
    (exec setsid nohup "$REPO/scripts/pulsar-standalone.sh" "$STATE") >>"$LOG" 2>&1 </dev/null &
    echo $! >"$STATE/standalone.pid"
}

broker_port_open() { (exec 3<>"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null; }

# The bookie turns read-only when its disk passes diskUsageThreshold (0.99 in the
# standalone's config), and the broker then refuses every write with errors that name
# the broker, not the disk: say so up front.
warn_if_disk_nearly_full() {
    mkdir -p "$STATE"
    local used
    used=$(df --output=pcent "$STATE" 2>/dev/null | tail -n 1 | tr -dc '0-9')
    if [ -n "$used" ] && [ "$used" -ge 95 ]; then
        log "WARNING: the disk holding $STATE is ${used}% full; at 99% the bookie turns read-only and the broker refuses writes"
    fi
}
warn_if_disk_nearly_full

if ready; then
    log "Pulsar $VERSION answers healthy on $ADMIN with both Debezium connectors"
    exit 0
fi
# A standalone that is still starting (or stopping) holds the broker port: wait for it
# to become ready, or to go away and be started anew.
deadline=$((SECONDS + WAIT_SECONDS))
started=false
until ready; do
    if ! $started && ! broker_port_open && ! healthy; then
        start_standalone
        started=true
    elif $started && ! kill -0 "$(cat "$STATE/standalone.pid")" 2>/dev/null; then
        tail -n 30 "$LOG" >&2 || true
        die "Pulsar standalone exited during start-up; see $LOG"
    fi
    [ "$SECONDS" -lt "$deadline" ] || {
        tail -n 30 "$LOG" >&2 || true
        die "Pulsar is not healthy with both Debezium connectors after ${WAIT_SECONDS}s; see $LOG"
    }
    sleep 1
done
log "ready: Pulsar $VERSION, broker pulsar://$BROKER, admin $ADMIN"
