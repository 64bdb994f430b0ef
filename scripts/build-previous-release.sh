#!/usr/bin/env bash
# Builds the previous release's binaries (the commit in scripts/previous-release.txt)
# for the rolling-upgrade test (integration-tests/tests/upgrade), once: they are cached
# in $XDB_PREVIOUS_RELEASE_DIR/<commit>/bin (default ~/.cache/xdb-previous-release) and
# reused by every later run.
#
# The build runs in a git worktree of that commit, outside this clone, with a target
# directory of its own ($XDB_PREVIOUS_RELEASE_DIR/target, kept warm for the next
# release). Not the shared $CARGO_TARGET_DIR: the old workspace's crates have the same
# names, versions and paths relative to their workspace root as the current ones, so
# cargo gives them the same artifact names; building them there overwrites the current
# binaries in debug/ (which other scripts run) and leaves library artifacts that the
# current workspace's next build may take for fresh.
#
# Prints the bin directory on its last line. Needs git, cargo and protoc
# (scripts/ensure-rust.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
commit=$(grep -v '^#' scripts/previous-release.txt | grep -m1 -E '^[0-9a-f]{40}$' || true)
if [ -z "$commit" ]; then
    echo "build-previous-release: scripts/previous-release.txt names no 40-hex commit" >&2
    exit 1
fi
root="${XDB_PREVIOUS_RELEASE_DIR:-$HOME/.cache/xdb-previous-release}"
cache="$root/$commit"
bins=(xdb-server xdb-sys-schema)
have_all=1
for bin in "${bins[@]}"; do
    [ -x "$cache/bin/$bin" ] || have_all=0
done
if [ "$have_all" = 1 ]; then
    echo "build-previous-release: cached binaries of $commit" >&2
    echo "$cache/bin"
    exit 0
fi

scripts/ensure-rust.sh
git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || {
    echo "build-previous-release: commit $commit is not in this clone (git fetch it first)" >&2
    exit 1
}
mkdir -p "$cache"
src="$cache/src"
# A worktree left by an interrupted run is replaced.
git -C "$repo" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
git -C "$repo" worktree prune
git -C "$repo" worktree add --detach "$src" "$commit" >&2
trap 'git -C "$repo" worktree remove --force "$src" 2>/dev/null || true' EXIT

target="$root/target"
started=$(date +%s)
# Debug info off: these binaries are only run, and it halves the link time and disk.
(cd "$src" && CARGO_PROFILE_DEV_DEBUG=0 cargo build --locked --target-dir "$target" \
    -p xdb-server -p xdb-sys-schema >&2)
echo "build-previous-release: built $commit in $(($(date +%s) - started)) s" >&2

mkdir -p "$cache/bin.tmp"
for bin in "${bins[@]}"; do
    cp "$target/debug/$bin" "$cache/bin.tmp/$bin"
done
echo "$commit" >"$cache/bin.tmp/COMMIT"
rm -rf "$cache/bin"
mv "$cache/bin.tmp" "$cache/bin"
echo "$cache/bin"
