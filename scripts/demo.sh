#!/usr/bin/env bash
# Runs XDB with the user sign-up sample end to end on this machine:
# PostgreSQL (installed and started if missing), the XDB server (API + async service),
# the sample worker, and a client walking one user through sign-up.
#
# XDB_DEMO_DATABASE=mysql runs the same demo on MariaDB (XDB's MySQL dialect): only the
# URL changes.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly DB=xdb_demo
readonly DATABASE="${XDB_DEMO_DATABASE:-postgres}"
readonly REMINDER_SECONDS="${XDB_DEMO_REMINDER_SECONDS:-2}"
LOG_DIR="$(mktemp -d)"

scripts/ensure-rust.sh
case "$DATABASE" in
    postgres)
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
        echo "demo: XDB_DEMO_DATABASE must be postgres or mysql, not '$DATABASE'" >&2
        exit 2
        ;;
esac
echo "demo: building XDB and the sample"
cargo build --quiet -p xdb-server -p xdb-samples --bins

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

target="${CARGO_TARGET_DIR:-target}/debug"
"$target/xdb-server" --database-url "$DB_URL" --install-schema >"$LOG_DIR/xdb-server.log" 2>&1 &
pids+=($!)
"$target/xdb-sample-worker" --reminder-interval-seconds "$REMINDER_SECONDS" >"$LOG_DIR/worker.log" 2>&1 &
pids+=($!)

wait_for() {
    for _ in $(seq 1 100); do
        curl -fsS "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "demo: $1 did not come up; logs in $LOG_DIR" >&2
    exit 1
}
wait_for http://127.0.0.1:8801/health/ready
wait_for http://127.0.0.1:8803/health

"$target/xdb-signup-demo"

echo "6. the user row in the business table:"
show_users
echo "7. emails the worker sent (from its log):"
grep 'sending email' "$LOG_DIR/worker.log" | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^.*sending email/   sending email/' || true
echo "demo: done (service and worker logs in $LOG_DIR)"
