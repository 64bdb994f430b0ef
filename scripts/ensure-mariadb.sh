#!/usr/bin/env bash
# Make sure a MariaDB server answers on 127.0.0.1:3306, lets `root` in over TCP without a
# password, and allows at least 300 connections, so that
# `mysql://root@127.0.0.1:3306/mysql` (the tests' default XDB_TEST_MYSQL_URL) works.
# For development and CI machines only: a password-less root is not for production.
#
# Idempotent. Debian/Ubuntu; installing or starting the server needs root.
#   - server answers already: only check the login and max_connections;
#   - installed but stopped: start mariadbd in the background (no systemd needed);
#   - not installed: apt-get install mariadb-server, then start it.
# Environment: XDB_MARIADB_WAIT_SECONDS (default 60) bounds every wait for the server.
set -euo pipefail

readonly HOST=127.0.0.1
readonly PORT=3306
readonly MIN_CONNECTIONS=300
readonly WAIT_SECONDS="${XDB_MARIADB_WAIT_SECONDS:-60}"
readonly SERVER=/usr/sbin/mariadbd
readonly XDB_CNF_DIR=/etc/mysql/mariadb.conf.d
readonly XDB_CNF="$XDB_CNF_DIR/99-xdb-tests.cnf"

log() { echo "ensure-mariadb: $*"; }
die() {
    echo "ensure-mariadb: ERROR: $*" >&2
    exit 1
}

require_root() {
    [ "$(id -u)" -eq 0 ] || die "$1 needs root; re-run as root (e.g. sudo $0)"
}

client() {
    if command -v mariadb >/dev/null 2>&1; then echo mariadb; else echo mysql; fi
}

# 0 when something accepts TCP connections on $HOST:$PORT.
answers() {
    (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}

# Runs one SQL statement as root over TCP without a password.
sql_tcp() {
    "$(client)" --protocol=tcp -h "$HOST" -P "$PORT" -uroot --connect-timeout=5 -N -B -e "$1"
}

# Runs SQL as root over the local socket (unix_socket authentication of the OS root).
sql_socket() {
    "$(client)" --protocol=socket -uroot -N -B -e "$1"
}

# Accepts TCP connections and answers a query (over TCP, or over the socket before the
# TCP login is configured).
ready() {
    answers && { sql_tcp "SELECT 1" || sql_socket "SELECT 1"; } >/dev/null 2>&1
}

wait_ready() {
    local deadline=$((SECONDS + WAIT_SECONDS))
    until ready; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            die "MariaDB does not accept connections on $HOST:$PORT after ${WAIT_SECONDS}s; see /var/log/mysql/"
        fi
        sleep 1
    done
}

start_local_server() {
    require_root "starting or installing MariaDB"
    if [ ! -x "$SERVER" ]; then
        log "MariaDB is not installed; installing it with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y mariadb-server mariadb-client
    fi
    # The package's own start may have worked (a system with an init system).
    if answers; then
        return 0
    fi
    if [ -d "$XDB_CNF_DIR" ] && [ ! -f "$XDB_CNF" ]; then
        printf '%s\n' "# xdb: test server settings (scripts/ensure-mariadb.sh)" "[mysqld]" \
            "bind-address = $HOST" "port = $PORT" "max_connections = 500" >"$XDB_CNF"
        log "wrote $XDB_CNF"
    fi
    if [ ! -d /var/lib/mysql/mysql ]; then
        log "initialising the data directory /var/lib/mysql"
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    fi
    install -d -o mysql -g mysql /run/mysqld
    log "starting $SERVER"
    # The pid file names this server: another mariadbd on the machine (another port)
    # must not pass for it.
    start-stop-daemon --start --oknodo --background --pidfile /run/mysqld/mysqld.pid \
        --exec "$SERVER" -- --user=mysql
}

if answers; then
    log "MariaDB already answers on $HOST:$PORT"
else
    start_local_server
    wait_ready
fi

# Password-less root over TCP (a fresh Debian install allows root only over the socket).
if ! sql_tcp "SELECT 1" >/dev/null 2>&1; then
    require_root "configuring the root login"
    sql_socket "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
        FLUSH PRIVILEGES;" ||
        die "cannot configure root over the local socket; log in as an admin and allow root@127.0.0.1 without a password"
    sql_tcp "SELECT 1" >/dev/null ||
        die "still cannot log in as root without a password on $HOST:$PORT"
    log "allowed root to log in over TCP without a password"
fi

# Many tests each hold a connection pool; 151 (the default) runs out quickly.
connections="$(sql_tcp "SELECT @@max_connections")"
if [ "$connections" -lt "$MIN_CONNECTIONS" ]; then
    sql_tcp "SET GLOBAL max_connections = 500"
    log "max_connections was $connections; set it to 500 until the server restarts"
    connections="$(sql_tcp "SELECT @@max_connections")"
fi

log "ready: mysql://root@$HOST:$PORT/mysql ($(sql_tcp "SELECT VERSION()"), max_connections=$connections)"
