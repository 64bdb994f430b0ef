#!/usr/bin/env bash
# Runs the Helm chart's pods as local processes, as operators run them, and drives
# processes through them (helm/run_chart_locally.py; helm/README.md explains the check):
#   1. scripts/check-helm.sh: the static checks, and the virtualenv with helm-python-sdk
#      the runner renders the chart with;
#   2. ruff (lint, format) and mypy --strict on the runner and on step 1's checks, from a
#      virtualenv of their own;
#   3. cargo build of what the chart's images hold (their Dockerfiles) and the sample worker;
#   4. PostgreSQL and MariaDB (installed and started if missing);
#   5. the runner, one mode after another (database queue on PostgreSQL, on MariaDB;
#      Pulsar CDC mode with helm/xdb/ci/pulsar-values.yaml on the local standalone).
# Extra arguments go to the runner, e.g. `scripts/test-chart.sh --mode mariadb --keep`.
# Environment: CARGO_TARGET_DIR (default ~/.cache/xdb-ci-target), XDB_TOOLS_VENV (the
# check-helm virtualenv), XDB_CHART_LINT_VENV (default ~/.cache/xdb-chart-lint).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly VENV="${XDB_TOOLS_VENV:-$HOME/.cache/xdb-deploy-tools}"
readonly LINT_VENV="${XDB_CHART_LINT_VENV:-$HOME/.cache/xdb-chart-lint}"
readonly LINT_REQUIREMENTS="ruff==0.17.6 mypy==2.4.1 types-PyYAML==6.0.12.20261122"
readonly RUNNER=(helm/run_chart_locally.py helm/chart_release.py helm/local_pods.py
    helm/local_services.py helm/pulsar_mode.py helm/check_chart.py)
# The static checks check-helm.sh runs, linted with the runner.
readonly DEPLOY_CHECK=deploy/check_deploy.py
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/xdb-ci-target}"

log() { echo "test-chart: $*"; }

scripts/check-helm.sh

if [ "$(cat "$LINT_VENV/.requirements" 2>/dev/null)" != "$LINT_REQUIREMENTS" ]; then
    log "installing $LINT_REQUIREMENTS into $LINT_VENV"
    rm -rf "$LINT_VENV"
    python3 -m venv "$LINT_VENV"
    # shellcheck disable=SC2086 # the list is word-split on purpose
    "$LINT_VENV/bin/pip" install --quiet --disable-pip-version-check $LINT_REQUIREMENTS
    echo "$LINT_REQUIREMENTS" >"$LINT_VENV/.requirements"
fi
log "ruff and mypy on the runner and the static checks"
"$LINT_VENV/bin/ruff" check --line-length 100 --target-version py311 --select E,F,W,I,B,UP \
    "${RUNNER[@]}" "$DEPLOY_CHECK"
"$LINT_VENV/bin/ruff" format --line-length 100 --check "${RUNNER[@]}" "$DEPLOY_CHECK"
# The runner's imports (helm_python, yaml, check_chart) resolve in the check-helm venv.
(cd helm && MYPYPATH=. "$LINT_VENV/bin/mypy" --strict --python-executable "$VENV/bin/python" \
    --follow-imports silent --ignore-missing-imports --cache-dir "$LINT_VENV/.mypy_cache" \
    "${RUNNER[@]#helm/}")
(cd deploy && "$LINT_VENV/bin/mypy" --strict --python-executable "$VENV/bin/python" \
    --ignore-missing-imports --cache-dir "$LINT_VENV/.mypy_cache" "${DEPLOY_CHECK#deploy/}")

# shellcheck disable=SC2207 # package names have no spaces
packages=($("$VENV/bin/python" helm/run_chart_locally.py --print-packages))
log "building ${packages[*]}"
scripts/cargo-build-bins.sh "${packages[@]}"

scripts/ensure-postgres.sh
scripts/ensure-mariadb.sh

# Pulsar mode (unless only other modes are asked for): the shared standalone, and the
# image apachepulsar/pulsar-all as a directory whose bin/pulsar-admin runs Pulsar's admin
# CLI (pulsar-client-tools of the standalone's version, from Maven Central) on the
# standalone's jars.
pulsar=()
if [[ " $* " != *" --mode "* || " $* " == *" pulsar "* ]]; then
    scripts/ensure-pulsar.sh
    version="$(sed -n 's:.*<pulsar.version>\(.*\)</pulsar.version>.*:\1:p' pulsar-io/standalone/pom.xml)"
    standalone="${XDB_STANDALONE_PULSAR_CACHE:-$HOME/.cache/xdb-pulsar}/$version/lib"
    home="${XDB_CHART_PULSAR_HOME:-$HOME/.cache/xdb-pulsar-admin}/$version"
    if [ ! -x "$home/bin/pulsar-admin" ]; then
        log "fetching pulsar-client-tools $version into $home"
        rm -rf "$home"
        mkdir -p "$home/bin" "$home/conf"
        for artifact in pulsar-client-tools pulsar-client-tools-api; do
            mvn -B -q -s pulsar-io/standalone/maven-settings.xml dependency:copy \
                -Dartifact="org.apache.pulsar:$artifact:$version" -DoutputDirectory="$home/lib" \
                >>"$home/maven.log" 2>&1 || { cat "$home/maven.log" >&2; exit 1; }
        done
        printf 'webServiceUrl=http://127.0.0.1:8080/\nbrokerServiceUrl=pulsar://127.0.0.1:6650/\n' \
            >"$home/conf/client.conf"
        {
            echo '#!/usr/bin/env bash'
            echo "# pulsar-admin of apachepulsar/pulsar-all:$version, on the local standalone's jars."
            echo "exec java -cp '$home/lib/*:$standalone/*' org.apache.pulsar.admin.cli.PulsarAdminTool '$home/conf/client.conf' \"\$@\""
        } >"$home/bin/pulsar-admin.tmp"
        chmod +x "$home/bin/pulsar-admin.tmp"
        mv "$home/bin/pulsar-admin.tmp" "$home/bin/pulsar-admin"
    fi
    pulsar=(--pulsar-home "$home")
fi

"$VENV/bin/python" helm/run_chart_locally.py --target "$CARGO_TARGET_DIR/debug" "${pulsar[@]}" "$@"
