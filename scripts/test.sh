#!/usr/bin/env bash
# Runs the whole XDB test suite: formatting, lints, unit tests and the integration suite
# against real PostgreSQL and MariaDB servers (installed and started if missing), the
# Pulsar-mode scenarios against Apache Pulsar fed by Pulsar IO's Debezium sources, and
# the Python and TypeScript SDKs' own checks and tests against the services built here,
# the web console in headless Chromium, the Helm chart's pods run as local processes, a
# rolling upgrade from the previous release (its binaries built once and cached), and
# the docs (mdBook build, links).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-rust.sh
scripts/ensure-postgres.sh
scripts/ensure-mariadb.sh
# Pulsar CDC mode: Debezium-ready databases and Apache Pulsar standalone with the Pulsar
# IO Debezium connectors (resolved from Maven Central on first use).
scripts/ensure-pulsar.sh

echo "test: deployment artefacts (Helm chart, Dockerfiles, compose files), and the chart's pods run as local processes in each mode"
scripts/test-chart.sh
echo "test: cargo fmt --check"
cargo fmt --all -- --check
echo "test: cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "test: docs (the generated configuration page, the mdBook build, relative links and anchors)"
scripts/check-docs.sh
echo "test: the previous release's binaries for the rolling-upgrade test (built once, cached outside the clone)"
scripts/build-previous-release.sh >/dev/null
echo "test: cargo test"
# The fault-injection suite (faults, partitions, schedules, broker restarts) runs on
# its own afterwards, so that its counts are printed.
cargo test --workspace -- --skip faults_lose_and_duplicate_nothing \
    --skip partitions_lose_and_duplicate_nothing --skip schedule_faults_fire_each_time_once \
    --skip pulsar_broker_restarts_need_no_instance_restart
echo "test: TypeScript SDK (tsc, eslint, unit tests; integration on PostgreSQL and MariaDB)"
scripts/test-sdk-typescript.sh
echo "test: web console (assets up to date, unit tests, end-to-end in headless Chromium on PostgreSQL)"
scripts/test-console.sh
echo "test: Python SDK (ruff, mypy, unit tests; integration on PostgreSQL and MariaDB, cross-language)"
scripts/test-sdk-python.sh
echo "test: SDK packages (wheel, sdist and npm tarball installed from the artefacts alone, the READMEs' example run against xdb dev)"
scripts/test-packages.sh
echo "test: the demo (scripts/demo.sh --exit, on the embedded PostgreSQL of xdb dev)"
scripts/demo.sh --exit
echo "test: fault injection (kills, restarts, worker faults, double delivery, network partitions, schedules, Pulsar broker restarts)"
cargo test -p xdb-integration-tests --test faults -- --nocapture 2>&1 | grep -v "WARN\|INFO"
echo "test: API fuzzing (schemathesis against the served OpenAPI document)"
scripts/fuzz-api.sh
