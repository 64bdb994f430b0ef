#!/usr/bin/env bash
# Configures the local test databases for Debezium change data capture (Pulsar CDC mode):
#   - PostgreSQL: wal_level = logical, enough replication slots and WAL senders for one
#     slot per test database captured at once;
#   - MariaDB: the binary log on, in ROW format with full row images, and a server id.
# Each needs a server restart, done only when a setting is missing: a second run does
# nothing and takes well under a second. Run after ensure-postgres.sh and
# ensure-mariadb.sh. The test login (postgres / root) is the replication user here; on
# a real deployment create a dedicated one (see pulsar-io/README.md).
set -euo pipefail

readonly PG_MIN_SLOTS=64
readonly MARIADB_CNF=/etc/mysql/mariadb.conf.d/99-xdb-cdc.cnf
readonly WAIT_SECONDS="${XDB_CDC_WAIT_SECONDS:-60}"

log() { echo "ensure-cdc-databases: $*"; }
die() {
    echo "ensure-cdc-databases: ERROR: $*" >&2
    exit 1
}

psql_tcp() {
    PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -w -XtAq -c "$1"
}

sql_tcp() {
    local client=mysql
    if command -v mariadb >/dev/null 2>&1; then client=mariadb; fi
    "$client" --protocol=tcp -h 127.0.0.1 -P 3306 -uroot --connect-timeout=5 -N -B -e "$1"
}

wait_for() { # description command...
    local what="$1"
    shift
    local deadline=$((SECONDS + WAIT_SECONDS))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || die "$what did not come back after ${WAIT_SECONDS}s"
        sleep 0.5
    done
}

ensure_postgres() {
    local level slots senders
    level="$(psql_tcp "SHOW wal_level")"
    slots="$(psql_tcp "SHOW max_replication_slots")"
    senders="$(psql_tcp "SHOW max_wal_senders")"
    if [ "$level" = logical ] && [ "$slots" -ge "$PG_MIN_SLOTS" ] && [ "$senders" -ge "$PG_MIN_SLOTS" ]; then
        log "PostgreSQL: wal_level=logical, max_replication_slots=$slots, max_wal_senders=$senders"
        return 0
    fi
    psql_tcp "ALTER SYSTEM SET wal_level = logical"
    psql_tcp "ALTER SYSTEM SET max_replication_slots = $PG_MIN_SLOTS"
    psql_tcp "ALTER SYSTEM SET max_wal_senders = $PG_MIN_SLOTS"
    local cluster
    cluster="$(pg_lsclusters -h 2>/dev/null | awk '$2 == "main" && $3 == 5432 { print $1 }' | sort -V | tail -n1)"
    [ -n "$cluster" ] || die "wal_level is $level: restart PostgreSQL yourself to apply wal_level=logical (not a local Debian cluster)"
    [ "$(id -u)" -eq 0 ] || die "restarting PostgreSQL needs root"
    log "PostgreSQL: wal_level was $level (slots $slots, senders $senders); restarting $cluster/main"
    pg_ctlcluster --skip-systemctl-redirect "$cluster" main restart
    wait_for "PostgreSQL" psql_tcp "SELECT 1"
    [ "$(psql_tcp "SHOW wal_level")" = logical ] || die "wal_level is still not logical after the restart"
    log "PostgreSQL: wal_level=logical"
}


# Debezium 1.9.7's MySQL connector (the one Pulsar IO 4.0.8 ships) reads MariaDB 10.11's
# binary log as the server reports itself; nothing else is needed. (Debezium 3.x took
# MariaDB's "10.11.19-MariaDB" for a MySQL 8.4 and refused it; earlier versions of this
# script set the reported version for that, and a settings file of theirs is replaced.)
#
# The log is kept an hour, in files of 256 MiB (MariaDB expires logs only when it starts
# a new file): a day's tests and benches wrote 26 GB of it, and a connector needs only
# what it has not read yet.
ensure_mariadb() {
    local log_bin format image version
    log_bin="$(sql_tcp "SELECT @@log_bin")"
    format="$(sql_tcp "SELECT @@binlog_format")"
    image="$(sql_tcp "SELECT @@binlog_row_image")"
    version="$(sql_tcp "SELECT VERSION()")"
    local marker="# xdb: binary log for Debezium (scripts/ensure-cdc-databases.sh)"
    local settings=("$marker" "[mysqld]"
        "server_id = 1" "log_bin = mysql-bin" "binlog_format = ROW" "binlog_row_image = FULL"
        "binlog_expire_logs_seconds = 3600" "max_binlog_size = 256M")
    local wanted
    wanted="$(printf '%s\n' "${settings[@]}")"
    local current=""
    [ -f "$MARIADB_CNF" ] && current="$(cat "$MARIADB_CNF")"
    if [ "$log_bin" = 1 ] && [ "$format" = ROW ] && [ "$image" = FULL ] &&
        { [ ! -d "$(dirname "$MARIADB_CNF")" ] || [ "$current" = "$wanted" ]; }; then
        log "MariaDB: log_bin=ON, binlog_format=ROW, binlog_row_image=FULL, version=$version"
        return 0
    fi
    case "$version" in
    *MariaDB*) ;;
    *) die "not a MariaDB server ($version): set log_bin, binlog_format=ROW and binlog_row_image=FULL yourself" ;;
    esac
    [ "$(id -u)" -eq 0 ] || die "configuring the MariaDB binary log needs root"
    local target="$MARIADB_CNF"
    if [ -d "$(dirname "$MARIADB_CNF")" ]; then
        printf '%s\n' "${settings[@]}" >"$MARIADB_CNF"
    elif [ -f /etc/mysql/my.cnf ]; then
        # No include directory: a marked section at the end of my.cnf (the last wins),
        # replacing the one an earlier run appended.
        target=/etc/mysql/my.cnf
        sed -i "/^${marker//\//\\/}\$/,\$d" "$target"
        printf '%s\n' "${settings[@]}" >>"$target"
    else
        die "no MariaDB config file found: set log_bin, binlog_format=ROW and binlog_row_image=FULL yourself"
    fi
    log "MariaDB: log_bin=$log_bin binlog_format=$format version=$version; configured $target, restarting mariadbd"
    # Keep max_connections raised by ensure-mariadb.sh across the restart.
    local connections
    connections="$(sql_tcp "SELECT @@max_connections")"
    # This server's process, not any mariadbd: another instance on the machine (a
    # second port, a private test server) must neither be waited for nor stop the start.
    local pid_file pid
    pid_file="$(sql_tcp "SELECT @@pid_file")"
    pid="$(cat "$pid_file")"
    sql_tcp "SHUTDOWN"
    # The port closes before the process exits; a start before then fails.
    local deadline=$((SECONDS + WAIT_SECONDS))
    while kill -0 "$pid" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || die "MariaDB (pid $pid) did not stop"
        sleep 0.2
    done
    install -d -o mysql -g mysql /run/mysqld
    start-stop-daemon --start --oknodo --background --pidfile "$pid_file" \
        --exec /usr/sbin/mariadbd -- --user=mysql
    wait_for "MariaDB" sql_tcp "SELECT 1"
    if [ "$(sql_tcp "SELECT @@max_connections")" -lt "$connections" ]; then
        sql_tcp "SET GLOBAL max_connections = $connections"
    fi
    [ "$(sql_tcp "SELECT @@binlog_format")" = ROW ] || die "binlog_format is still not ROW after the restart"
    log "MariaDB: log_bin=ON, binlog_format=ROW, version=$(sql_tcp "SELECT VERSION()")"
}

ensure_postgres
ensure_mariadb
