#!/usr/bin/env bash
# Runs XDB with the user sign-up sample end to end on this machine, then leaves the
# services and the web console running until Ctrl-C.
#
# By default XDB runs as `xdb dev` on an embedded PostgreSQL: no root, no installed
# database server (the PostgreSQL binaries are downloaded once from Maven Central and
# cached). XDB_DEMO_DATABASE=postgres-server runs it on Debian's PostgreSQL server and
# XDB_DEMO_DATABASE=mysql on MariaDB (each installed and started if missing).
#
#   scripts/demo.sh          # walk one user through sign-up, then keep running
#   scripts/demo.sh --exit   # stop after the walk (scripts, CI)
set -euo pipefail
cd "$(dirname "$0")/.."

exit_after_walk=false
case "${1:-}" in
    "") ;;
    --exit) exit_after_walk=true ;;
    *)
        echo "demo: unknown argument '$1' (the only one is --exit)" >&2
        exit 2
        ;;
esac

readonly DB=xdb_demo
readonly DATABASE="${XDB_DEMO_DATABASE:-embedded}"
readonly REMINDER_SECONDS="${XDB_DEMO_REMINDER_SECONDS:-2}"
readonly CONSOLE_URL=http://127.0.0.1:8801/ui
LOG_DIR="$(mktemp -d)"
SERVICE_LOG="$LOG_DIR/xdb.log"
WORKER_LOG="$LOG_DIR/xdb.log"

scripts/ensure-rust.sh
target="${CARGO_TARGET_DIR:-target}/debug"
show_users() { :; }
case "$DATABASE" in
    embedded)
        echo "demo: building xdb and the sample"
        scripts/cargo-build-bins.sh xdb-cli xdb-samples
        ;;
    postgres-server)
        scripts/ensure-postgres.sh
        DB_URL="postgres://postgres@127.0.0.1:5432/${DB}"
        psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS ${DB} WITH (FORCE)" -c "CREATE DATABASE ${DB}"
        psql -q -h 127.0.0.1 -U postgres -d "${DB}" -f samples/sql/postgres/user_signup.sql
        show_users() { psql -h 127.0.0.1 -U postgres -d "${DB}" -c 'SELECT * FROM "user"'; }
        ;;
    mysql)
        scripts/ensure-mariadb.sh
        DB_URL="mysql://root@127.0.0.1:3306/${DB}"
        mysql -h 127.0.0.1 -uroot -e "DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}"
        mysql -h 127.0.0.1 -uroot "${DB}" <samples/sql/mysql/user_signup.sql
        show_users() { mysql -h 127.0.0.1 -uroot -t "${DB}" -e 'SELECT * FROM `user`'; }
        ;;
    *)
        echo "demo: XDB_DEMO_DATABASE must be embedded, postgres-server or mysql, not '$DATABASE'" >&2
        exit 2
        ;;
esac

pids=()
stop_all() {
    # TERM, not INT: a shell script's background jobs ignore SIGINT.
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT TERM

wait_for() {
    for _ in $(seq 1 600); do
        curl -fsS "$1" >/dev/null 2>&1 && return 0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null || { echo "demo: XDB exited; logs in $LOG_DIR:" >&2; tail -20 "$LOG_DIR"/*.log >&2; exit 1; }
        done
        sleep 0.1
    done
    echo "demo: $1 did not come up; logs in $LOG_DIR" >&2
    exit 1
}

if [ "$DATABASE" = embedded ]; then
    echo "demo: starting xdb dev (embedded PostgreSQL; the first start downloads it once)"
    "$target/xdb" dev --ephemeral --sample-reminder-interval "${REMINDER_SECONDS}s" >"$SERVICE_LOG" 2>&1 &
    pids+=($!)
else
    scripts/cargo-build-bins.sh xdb-server xdb-samples
    SERVICE_LOG="$LOG_DIR/xdb-server.log"
    WORKER_LOG="$LOG_DIR/worker.log"
    "$target/xdb-server" --database-url "$DB_URL" --install-schema >"$SERVICE_LOG" 2>&1 &
    pids+=($!)
    "$target/xdb-sample-worker" --reminder-interval-seconds "$REMINDER_SECONDS" >"$WORKER_LOG" 2>&1 &
    pids+=($!)
fi
wait_for http://127.0.0.1:8801/health/ready
wait_for http://127.0.0.1:8803/health

"$target/xdb-signup-demo"

if [ "$DATABASE" != embedded ]; then
    echo "6. the user row in the business table:"
    show_users
fi
echo "   emails the worker sent (from its log):"
grep 'sending email' "$WORKER_LOG" | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^.*sending email/   sending email/' || true
if $exit_after_walk; then
    echo "demo: done (logs in $LOG_DIR)"
    exit 0
fi
echo
echo "demo: XDB keeps running. Console: $CONSOLE_URL   API: http://127.0.0.1:8801"
echo "      try: ${target}/xdb list     (logs in $LOG_DIR; Ctrl-C stops everything)"
wait "${pids[0]}"
