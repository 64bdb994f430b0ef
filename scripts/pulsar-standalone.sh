#!/usr/bin/env bash
# Runs one Apache Pulsar standalone in the foreground, from the artefacts
# scripts/ensure-pulsar.sh resolved, with pulsar-io/standalone's config: the shared
# broker of the tests and local runs (started by ensure-pulsar.sh), and brokers of a
# test's own that it stops and restarts (integration-tests/src/pulsar.rs).
#
# Usage: pulsar-standalone.sh STATE_DIR [--broker-port N] [--web-port N]
#                             [--bookie-port N] [--no-functions-worker]
#                             [--tls-port N --tls-dir DIR]
# --tls-port adds a pulsar+ssl:// listener with DIR's server.pem, server.key (PKCS#8)
# and ca.pem.
# STATE_DIR holds the data (kept across restarts) and the generated config. The JVM
# replaces this script's process, so killing the process kills the broker.
# Environment: XDB_STANDALONE_PULSAR_CACHE (default ~/.cache/xdb-pulsar),
# XDB_STANDALONE_PULSAR_HEAP (1g).
set -euo pipefail

readonly CONF="$(cd "$(dirname "$0")/../pulsar-io/standalone" && pwd)"
readonly VERSION="$(sed -n 's:.*<pulsar.version>\(.*\)</pulsar.version>.*:\1:p' "$CONF/pom.xml")"
readonly CACHE="${XDB_STANDALONE_PULSAR_CACHE:-$HOME/.cache/xdb-pulsar}/$VERSION"
readonly HEAP="${XDB_STANDALONE_PULSAR_HEAP:-1g}"

die() {
    echo "pulsar-standalone: ERROR: $*" >&2
    exit 1
}

[ $# -ge 1 ] || die "usage: $0 STATE_DIR [--broker-port N] [--web-port N] [--bookie-port N] [--no-functions-worker] [--tls-port N --tls-dir DIR]"
state="$1"
shift
broker_port=6650 web_port=8080 bookie_port=3181 functions=true tls_port="" tls_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
    --broker-port) broker_port="$2" && shift 2 ;;
    --web-port) web_port="$2" && shift 2 ;;
    --bookie-port) bookie_port="$2" && shift 2 ;;
    --no-functions-worker) functions=false && shift ;;
    --tls-port) tls_port="$2" && shift 2 ;;
    --tls-dir) tls_dir="$(cd "$2" && pwd)" && shift 2 ;;
    *) die "unknown argument $1" ;;
    esac
done
[ -f "$CACHE/.resolved" ] || die "Pulsar $VERSION is not resolved in $CACHE: run scripts/ensure-pulsar.sh"

mkdir -p "$state"
cd "$state"
ln -sfn "$CACHE/connectors" connectors
# The committed config with this broker's ports (a later key wins in a properties file).
{
    cat "$CONF/standalone.conf"
    printf '\n# pulsar-standalone.sh\nbrokerServicePort=%s\nwebServicePort=%s\n' "$broker_port" "$web_port"
    if [ -n "$tls_port" ]; then
        [ -n "$tls_dir" ] || die "--tls-port needs --tls-dir"
        printf 'brokerServicePortTls=%s\ntlsCertificateFilePath=%s\ntlsKeyFilePath=%s\ntlsTrustCertsFilePath=%s\n' \
            "$tls_port" "$tls_dir/server.pem" "$tls_dir/server.key" "$tls_dir/ca.pem"
    fi
} >standalone.conf
sed "s/^workerPort: .*/workerPort: $web_port/" "$CONF/functions_worker.yml" >functions_worker.yml
worker_args=(--functions-worker-conf "$state/functions_worker.yml")
$functions || worker_args=(--no-functions-worker)

# Ephemeral nodes left by a killed standalone make the restarted bookie's registration
# flap until the JVM exits (see the program's comment): delete them first.
if [ -d data/metadata ]; then
    rocksdb_jar=("$CACHE"/lib/rocksdbjni-*.jar)
    java -cp "${rocksdb_jar[0]}" "$CONF/ClearStaleEphemerals.java" data/metadata ||
        die "could not clear the stale ephemeral nodes of $state/data/metadata (is another standalone running on it?)"
fi

# The --add-opens are those of Pulsar's own bin/pulsar for Java 17.
exec java -Xms256m "-Xmx$HEAP" -XX:MaxDirectMemorySize=1g -XX:+PerfDisableSharedMem \
    --add-opens java.base/java.io=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED \
    --add-opens java.base/java.util.zip=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.platform=ALL-UNNAMED \
    --add-opens java.base/sun.net=ALL-UNNAMED \
    --add-opens java.management/sun.management=ALL-UNNAMED \
    -Dlog4j2.configurationFile="$CONF/log4j2.properties" \
    -cp "$CACHE/lib/*" org.apache.pulsar.PulsarStandaloneStarter \
    --config "$state/standalone.conf" \
    --bookkeeper-port "$bookie_port" \
    --no-stream-storage \
    "${worker_args[@]}"
