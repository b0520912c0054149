#!/usr/bin/env bash
# Runs the server's node tests for CTest.
#   run_node.sh install <source node dir> <build node dir>   npm ci of the pinned openai package
#   run_node.sh run <build node dir> <script> [args...]      node <script> with that install
# Without node or npm it skips (exit 77) on a developer's machine and fails under CI (CI set).
# An npm that cannot reach the registry fails: it never passes silently.
set -euo pipefail

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [[ -n ${CI:-} ]]; then
        echo "run_node.sh: node and npm are required under CI" >&2
        exit 1
    fi
    echo "run_node.sh: SKIPPED: node or npm is not installed"
    exit 77
fi

mode=$1
shift
case $mode in
install)
    src=$1 dst=$2
    mkdir -p "$dst"
    cp "$src"/package.json "$src"/package-lock.json "$src"/*.mjs "$dst"/
    cd "$dst"
    npm ci --no-audit --no-fund --ignore-scripts
    ;;
run)
    dir=$1 script=$2
    shift 2
    [[ -d $dir/node_modules/openai ]] || { echo "run_node.sh: run the install fixture first" >&2; exit 1; }
    cd "$dir"
    exec node "$script" "$@"
    ;;
*)
    echo "usage: run_node.sh install|run ..." >&2
    exit 2
    ;;
esac
