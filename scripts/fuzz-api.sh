#!/usr/bin/env bash
# Fuzzes the service API with schemathesis (PyPI) against its served OpenAPI document:
# a live xdb-server on a fresh PostgreSQL database, every operation of the service's
# listener (the tags service, operate, batch, schedule, definitions and console: all but
# worker and internal), generated valid and invalid requests, and sequences that follow
# the start response's links (describe, history, stop, rpc, publish, wait on the started
# process). It fails on any 5xx and on a response that breaks the document (`--checks
# all`: status_code_conformance for a status the operation does not list,
# content_type_conformance, response_headers_conformance, response_schema_conformance,
# the error sub-types an operation lists), and schemathesis then exits non-zero. The
# worker paths are left out: workers serve them, not the service (their own `servers`);
# so is the internal path: only the instances' internal listeners serve it, on MySQL,
# to signed calls (integration-tests/tests/suite/internal_calls.rs).
# Bounded by the examples per operation; the seed is printed for replay.
#
# Needs PostgreSQL (scripts/ensure-postgres.sh) and python3 with venv. Environment:
#   XDB_TOOLS_VENV   virtualenv for the tool (default ~/.cache/xdb-fuzz-tools)
#   XDB_FUZZ_EXAMPLES  examples per operation and phase (default 25)
#   XDB_FUZZ_SEED      a seed to replay a run (default: random)
set -euo pipefail
cd "$(dirname "$0")/.."

readonly VENV="${XDB_TOOLS_VENV:-$HOME/.cache/xdb-fuzz-tools}"
readonly REQUIREMENTS="schemathesis==4.32.5"
readonly DB=xdb_fuzz
readonly PORT=18801
readonly URL="http://127.0.0.1:${PORT}"
readonly EXAMPLES="${XDB_FUZZ_EXAMPLES:-25}"

log() { echo "fuzz-api: $*"; }

if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$REQUIREMENTS" ]; then
    log "installing $REQUIREMENTS into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $REQUIREMENTS
    echo "$REQUIREMENTS" >"$VENV/.requirements"
fi

scripts/cargo-build-bins.sh xdb-server
psql -q -h 127.0.0.1 -U postgres -d postgres \
    -c "DROP DATABASE IF EXISTS ${DB} WITH (FORCE)" -c "CREATE DATABASE ${DB}"
psql -q -h 127.0.0.1 -U postgres -d "${DB}" -f samples/sql/postgres/user_signup.sql

log_file="$(mktemp)"
"${CARGO_TARGET_DIR:-target}/debug/xdb-server" --install-schema \
    --database-url "postgres://postgres@127.0.0.1:5432/${DB}" --listen "127.0.0.1:${PORT}" \
    --max-wait-seconds 5 >"$log_file" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "${config_file:-}"' EXIT
for _ in $(seq 1 100); do
    curl -fsS "${URL}/health/ready" >/dev/null 2>&1 && break
    kill -0 $server 2>/dev/null || { cat "$log_file"; log "xdb-server exited"; exit 1; }
    sleep 0.1
done
curl -fsS "${URL}/health/ready" >/dev/null || { cat "$log_file"; log "xdb-server is not ready"; exit 1; }

seed_args=()
[ -n "${XDB_FUZZ_SEED:-}" ] && seed_args=(--seed "$XDB_FUZZ_SEED")
# negative_data_rejection runs: the service validates each request body against the
# served document (unknown fields, wrong types, limits), so what the document calls
# invalid is refused with 400 — or 413 when the invalid body is also over
# api.max_request_bytes (more ids than maxItems allows, each at its longest), which
# the config below accepts as a refusal too. Left out: positive_data_acceptance,
# because some valid requests are rightly refused for what a schema cannot say: a
# nextPageToken this service did not issue, a processExecutionId that is not a UUID,
# and integers written as `10.0` (serde reads u32 from integers only).
# The service runs with api.max_wait_seconds = 5: a wait-for-completion on a process
# that never finishes (its worker URL is made up) is a long poll, and would otherwise
# answer after 30 s, past schemathesis' response-time limit.
config_file="$(mktemp --suffix=.toml)"
cat >"$config_file" <<'EOF'
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
EOF
log "running schemathesis ($EXAMPLES examples per operation)"
if ! "$VENV/bin/schemathesis" --config-file "$config_file" \
    run "${URL}/api/v1/xdb/openapi.json" --url "$URL" \
    --exclude-tag-regex '^(worker|internal)$' \
    --checks all --exclude-checks positive_data_acceptance \
    -n "$EXAMPLES" --request-timeout 30 --no-color \
    --warnings off "${seed_args[@]}"; then
    log "FAILED; the service log follows"
    tail -50 "$log_file"
    exit 1
fi
if grep -q "panicked" "$log_file"; then
    log "FAILED: the service panicked"
    grep -A5 "panicked" "$log_file"
    exit 1
fi
log "OK: no server error, every response matches the document"
