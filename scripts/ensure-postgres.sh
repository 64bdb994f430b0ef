#!/usr/bin/env bash
# Make sure a PostgreSQL server answers on 127.0.0.1:5432, lets user `postgres` in over
# TCP without a password (trust), and allows at least 300 connections, so that
# `postgres://postgres@127.0.0.1:5432/postgres` (the tests' default XDB_TEST_POSTGRES_URL)
# works. For development and CI machines only: trust auth is not for production.
#
# Idempotent. Debian/Ubuntu; installing or starting the server needs root.
#   - server answers already: only check the login and max_connections;
#   - installed but stopped: start the cluster;
#   - not installed: apt-get install postgresql, configure trust, start it.
# Environment: XDB_PG_WAIT_SECONDS (default 60) bounds every wait for the server.
set -euo pipefail

readonly HOST=127.0.0.1
readonly PORT=5432
readonly MIN_CONNECTIONS=300
readonly WAIT_SECONDS="${XDB_PG_WAIT_SECONDS:-60}"
readonly HBA_MARKER="# xdb: trust TCP logins of postgres from 127.0.0.1 (scripts/ensure-postgres.sh)"
readonly HBA_RULE="host    all    postgres    127.0.0.1/32    trust"

log() { echo "ensure-postgres: $*"; }
die() {
    echo "ensure-postgres: ERROR: $*" >&2
    exit 1
}

require_root() {
    [ "$(id -u)" -eq 0 ] || die "$1 needs root; re-run as root (e.g. sudo $0)"
}

# pg_isready's status: 0 accepting, 1 rejecting (starting up / shutting down),
# 2 no response, 3 no attempt. Without the client tools, fall back to a TCP probe.
probe() {
    if command -v pg_isready >/dev/null 2>&1; then
        local status=0
        pg_isready -h "$HOST" -p "$PORT" -t 5 >/dev/null 2>&1 || status=$?
        echo "$status"
    elif (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
        echo 0
    else
        echo 2
    fi
}

wait_ready() {
    local deadline=$((SECONDS + WAIT_SECONDS))
    until [ "$(probe)" = 0 ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            die "PostgreSQL does not accept connections on $HOST:$PORT after ${WAIT_SECONDS}s; see /var/log/postgresql/"
        fi
        sleep 1
    done
}

# Runs one SQL statement as postgres over TCP; -w: fail instead of prompting for a password.
psql_tcp() {
    PGCONNECT_TIMEOUT=5 psql -h "$HOST" -p "$PORT" -U postgres -d postgres -w -XtAq -c "$1"
}

# Version of the Debian cluster `main` listening on $PORT, if any (empty otherwise).
local_cluster_on_port() {
    command -v pg_lsclusters >/dev/null 2>&1 || return 0
    pg_lsclusters -h 2>/dev/null | awk -v port="$PORT" '$2 == "main" && $3 == port { print $1 }' | sort -V | tail -n1
}

# Highest version with a `main` cluster configured under /etc/postgresql (empty if none).
configured_cluster() {
    local dir
    for dir in /etc/postgresql/*/main; do
        if [ -d "$dir" ]; then basename "$(dirname "$dir")"; fi
    done | sort -V | tail -n1
}

cluster_status() { # online | down | ...
    pg_lsclusters -h "$1" main 2>/dev/null | awk '{ print $4 }'
}

pg_ctl_main() { # version action
    pg_ctlcluster --skip-systemctl-redirect "$1" main "$2"
}

# Puts the trust rule on top of pg_hba.conf (the first matching line wins). Sets
# HBA_CHANGED=1 when the file was edited.
HBA_CHANGED=0
ensure_trust_rule() {
    local hba="/etc/postgresql/$1/main/pg_hba.conf"
    [ -f "$hba" ] || die "$hba not found"
    if grep -qF "$HBA_MARKER" "$hba"; then
        return 0
    fi
    local tmp
    tmp="$(mktemp)"
    { printf '%s\n%s\n\n' "$HBA_MARKER" "$HBA_RULE"; cat "$hba"; } >"$tmp"
    # Rewrite in place (cat, not mv) to keep the file's owner and mode.
    cat "$tmp" >"$hba"
    rm -f "$tmp"
    HBA_CHANGED=1
    log "added '$HBA_RULE' to the top of $hba"
}

start_local_server() {
    require_root "starting or installing PostgreSQL"
    local version
    version="$(configured_cluster)"
    if [ -z "$version" ]; then
        if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
            log "PostgreSQL is not installed; installing it with apt-get"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update
            apt-get install -y postgresql
        fi
        version="$(configured_cluster)"
        if [ -z "$version" ]; then
            # Packages present but no cluster (e.g. create_main_cluster = false).
            version="$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n1)"
            [ -n "$version" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql after installing"
            log "creating cluster $version/main"
            pg_createcluster "$version" main
        fi
    fi

    local port
    port="$(pg_lsclusters -h "$version" main | awk '{ print $3 }')"
    [ "$port" = "$PORT" ] ||
        die "cluster $version/main is configured for port $port, not $PORT; set 'port = $PORT' in /etc/postgresql/$version/main/postgresql.conf or point XDB_TEST_POSTGRES_URL at it"

    ensure_trust_rule "$version"
    if [ "$(cluster_status "$version")" = online ]; then
        # Started by the package's postinst, or running without answering on $HOST:$PORT
        # (e.g. another listen address): a restart applies pg_hba.conf either way.
        log "cluster $version/main is running but did not answer on $HOST:$PORT; restarting it"
        pg_ctl_main "$version" restart
    else
        log "starting cluster $version/main"
        pg_ctl_main "$version" start
    fi
    HBA_CHANGED=0 # a (re)start reads pg_hba.conf anyway
    CLUSTER="$version"
}

CLUSTER=""
case "$(probe)" in
0) log "PostgreSQL already answers on $HOST:$PORT" ;;
1)
    log "PostgreSQL on $HOST:$PORT is starting up; waiting for it"
    wait_ready
    ;;
*)
    start_local_server
    wait_ready
    log "PostgreSQL $CLUSTER/main is accepting connections on $HOST:$PORT"
    ;;
esac

if ! command -v psql >/dev/null 2>&1; then
    log "WARNING: psql is not installed here, so the login and max_connections were not checked"
    exit 0
fi
[ -n "$CLUSTER" ] || CLUSTER="$(local_cluster_on_port)"

# Passwordless login as postgres over TCP.
if ! psql_tcp "SELECT 1" >/dev/null 2>&1; then
    [ -n "$CLUSTER" ] ||
        die "cannot log in as postgres without a password on $HOST:$PORT, and the server is not a local Debian cluster this script can configure"
    require_root "configuring pg_hba.conf"
    ensure_trust_rule "$CLUSTER"
    if [ "$HBA_CHANGED" = 1 ]; then
        pg_ctl_main "$CLUSTER" reload
        log "reloaded $CLUSTER/main to apply pg_hba.conf"
    fi
    psql_tcp "SELECT 1" >/dev/null ||
        die "still cannot log in as postgres without a password on $HOST:$PORT; check /etc/postgresql/$CLUSTER/main/pg_hba.conf"
fi

# Settings read only at server start: changed with ALTER SYSTEM, applied by one restart.
RESTART_FOR=()

# Many tests each hold a connection pool; 100 (the default) runs out quickly.
connections="$(psql_tcp "SHOW max_connections")"
if [ "$connections" -lt "$MIN_CONNECTIONS" ]; then
    psql_tcp "ALTER SYSTEM SET max_connections = $MIN_CONNECTIONS"
    log "max_connections was $connections; set it to $MIN_CONNECTIONS (ALTER SYSTEM)"
    RESTART_FOR+=("max_connections = $MIN_CONNECTIONS")
fi

# The bench's per-statement profile (bench/src/profile.rs) reads pg_stat_statements, which
# the server must preload. Only when the module is installed: a preload list naming a
# missing library stops the server from starting.
if [ "$(psql_tcp "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_stat_statements'")" = 1 ]; then
    preload="$(psql_tcp "SHOW shared_preload_libraries")"
    case ",${preload// /}," in
    *,pg_stat_statements,*) ;;
    *)
        # A list setting takes one quoted item per library ('a,b' would be one name).
        items=""
        IFS=',' read -ra libraries <<<"$preload"
        for library in "${libraries[@]}"; do
            library="${library// /}"
            [ -z "$library" ] || items+="'$library', "
        done
        psql_tcp "ALTER SYSTEM SET shared_preload_libraries = ${items}'pg_stat_statements'"
        log "added pg_stat_statements to shared_preload_libraries (ALTER SYSTEM)"
        RESTART_FOR+=("shared_preload_libraries")
        ;;
    esac
fi

if [ "${#RESTART_FOR[@]}" -gt 0 ]; then
    if [ -n "$CLUSTER" ] && [ "$(id -u)" -eq 0 ]; then
        log "restarting cluster $CLUSTER/main to apply ${RESTART_FOR[*]}"
        pg_ctl_main "$CLUSTER" restart
        wait_ready
        connections="$(psql_tcp "SHOW max_connections")"
        [ "$connections" -ge "$MIN_CONNECTIONS" ] ||
            die "max_connections is still $connections after the restart"
    else
        log "WARNING: restart the server yourself to apply ${RESTART_FOR[*]} (not a local cluster, or not root)"
    fi
fi

command -v faketime >/dev/null 2>&1 || { require_root "installing faketime (the clock-skew tests run services under it)"; apt-get install -y faketime >/dev/null; }
log "ready: postgres://postgres@$HOST:$PORT/postgres (max_connections=$connections)"
