#!/usr/bin/env bash
# Measures a change against a baseline build on this machine, in one session: builds the
# release services of BASE_REV (in a throw-away worktree) and of the work tree, then runs
# the work tree's xdb-bench against each in turn, alternating, ROUNDS times. The machine
# is noisy, so a change is judged only against a baseline run beside it.
#
#   scripts/bench-alternate.sh b9cedb5 [--rounds 3] [--variant name:"bench flags"]... \
#       -- --databases postgres,mysql --scenarios lone,load --levels 64 --processes 8000
#
# Each --variant adds a run of the change's services with extra bench flags to every
# round (e.g. --variant registered:--register-definitions). Reports and logs go to
# $BENCH_OUT (default /tmp/xdb-bench-alternate): report-<round>-<variant>.md. The
# baseline builds in $BASELINE_TARGET_DIR (default: the target directory + -baseline).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,14p' "$0" >&2
    exit 2
}
[ $# -ge 1 ] || usage
base_rev=$1
shift
rounds=3
variants=()
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --variant) variants+=("$2"); shift 2 ;;
        --) shift; break ;;
        *) usage ;;
    esac
done
bench_args=("$@")

out=${BENCH_OUT:-/tmp/xdb-bench-alternate}
target=${CARGO_TARGET_DIR:-$PWD/target}
base_src="$out/baseline-src"
mkdir -p "$out/change" "$out/baseline"

echo "bench-alternate: building the change's release binaries"
cargo build --release -p xdb-api-service -p xdb-async-service -p xdb-bench
cp "$target/release/xdb-api-service" "$target/release/xdb-async-service" \
    "$target/release/xdb-bench" "$out/change/"

echo "bench-alternate: building $base_rev's services in $base_src"
if [ ! -d "$base_src" ]; then
    git worktree add --detach "$base_src" "$base_rev" >/dev/null
fi
git -C "$base_src" checkout --quiet --detach "$base_rev"
# A target directory of its own: cargo's fingerprints of workspace members leave out
# their path, so building the baseline's worktree into the change's directory overwrites
# the change's artefacts, and the next build fails on items that exist. Kept between
# runs, so later baselines build incrementally.
base_target=${BASELINE_TARGET_DIR:-$target-baseline}
(cd "$base_src" && CARGO_TARGET_DIR="$base_target" cargo build --release -p xdb-api-service -p xdb-async-service)
cp "$base_target/release/xdb-api-service" "$base_target/release/xdb-async-service" "$out/baseline/"
# One load generator for both sides: the bench finds the services beside its own binary.
cp "$out/change/xdb-bench" "$out/baseline/"

run() {
    local round=$1 name=$2 dir=$3
    shift 3
    echo "bench-alternate: round $round, $name, $(date -u +%H:%M:%S) UTC"
    "$out/$dir/xdb-bench" "${bench_args[@]}" "$@" --report "$out/report-$round-$name.md" \
        >"$out/log-$round-$name.txt" 2>&1 ||
        { echo "bench-alternate: $name failed, see $out/log-$round-$name.txt" >&2; exit 1; }
}

for round in $(seq 1 "$rounds"); do
    run "$round" baseline baseline
    run "$round" change change
    for variant in "${variants[@]}"; do
        # Word splitting of the flags is wanted: a variant is a name and a flag list.
        # shellcheck disable=SC2086
        run "$round" "${variant%%:*}" change ${variant#*:}
    done
done
echo "bench-alternate: reports in $out (report-<round>-<variant>.md)"
