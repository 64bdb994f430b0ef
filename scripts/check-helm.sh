#!/usr/bin/env bash
# Checks the deployment artefacts without a cluster or a container engine:
#   - helm/check_chart.py: lints and renders the Helm chart for the default values and
#     for Pulsar mode, and validates every manifest against the Kubernetes schemas;
#   - deploy/check_deploy.py: the Dockerfiles and docker-compose files are consistent
#     with the workspace (binaries built, commands run, settings known).
# Tools come from PyPI (helm-python-sdk bundles Helm's Go SDK; kubernetes-validate holds
# the schemas) into a virtualenv reused between runs. Idempotent; needs python3 + venv.
# Environment: XDB_TOOLS_VENV (default ~/.cache/xdb-deploy-tools).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly VENV="${XDB_TOOLS_VENV:-$HOME/.cache/xdb-deploy-tools}"
readonly REQUIREMENTS="helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 PyYAML==6.0.3"

log() { echo "check-helm: $*"; }

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    log "installing python3-venv"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$REQUIREMENTS" ]; then
    log "installing $REQUIREMENTS into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    # shellcheck disable=SC2086 # the list is word-split on purpose
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $REQUIREMENTS
    echo "$REQUIREMENTS" >"$VENV/.requirements"
fi

"$VENV/bin/python" helm/check_chart.py
"$VENV/bin/python" deploy/check_deploy.py
