#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each tests/fuzz/fuzz_*.cpp for <seconds>,
# JOBS of them at a time (one core each).
#   tests/fuzz/run.sh <seconds> [fuzzer...]      (default: every fuzzer)
# Environment: BUILD_DIR (default build-fuzz), JOBS (default: the number of cores). Compiles go
# through ccache as scripts/build.sh's do. Each fuzzer's output: $BUILD_DIR/fuzz-logs/<fuzzer>.log.
# Seeds: tests/fuzz/corpus/<fuzzer>/*, plus the files listed (one repo-relative path a line) in
# tests/fuzz/corpus/<fuzzer>.seeds. New inputs go to $BUILD_DIR/fuzz-corpus/<fuzzer>/, crashes to
# $BUILD_DIR/fuzz-artifacts/<fuzzer>/. Exits non-zero when any fuzzer fails.
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 <seconds> [fuzzer...]" >&2
  exit 2
fi
seconds=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}

if [[ $# -gt 0 ]]; then
  fuzzers=("$@")
else
  fuzzers=()
  for src in "$root"/tests/fuzz/fuzz_*.cpp; do
    fuzzers+=("$(basename "$src" .cpp)")
  done
fi

source "$root/scripts/ccache-env.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPAGODA_BUILD_FUZZERS=ON -DPAGODA_BUILD_TESTS=ON -DPAGODA_WITH_CUDA=OFF \
  -DPAGODA_BUILD_BENCH=OFF -DPAGODA_BUILD_EXAMPLES=OFF "${PAGODA_CCACHE_ARGS[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target "${fuzzers[@]}"
pagoda_ccache_report

# One fuzzer: seeds in, then libFuzzer for the budget; its output goes to its log.
run_fuzzer() {
  local f=$1
  local corpus=$build/fuzz-corpus/$f artifacts=$build/fuzz-artifacts/$f dict=()
  mkdir -p "$corpus" "$artifacts"
  if [[ -d $root/tests/fuzz/corpus/$f ]]; then
    cp -n "$root"/tests/fuzz/corpus/"$f"/* "$corpus"/ 2>/dev/null || true
  fi
  if [[ -f $root/tests/fuzz/corpus/$f.seeds ]]; then
    while read -r seed; do
      [[ -z $seed || $seed == \#* ]] && continue
      cp -n "$root/$seed" "$corpus"/ 2>/dev/null || true
    done <"$root/tests/fuzz/corpus/$f.seeds"
  fi
  [[ -f $root/tests/fuzz/corpus/$f.dict ]] && dict=(-dict="$root/tests/fuzz/corpus/$f.dict")
  # An input that runs longer than the whole budget is a hang: libFuzzer fails on it and keeps
  # it (-timeout; its default, 20 minutes, would stall the run). The outer timeout is a backstop
  # for a fuzzer that stops answering altogether.
  timeout --kill-after=10 $((2 * seconds + 60)) "$build/bin/$f" -max_total_time="$seconds" \
    -timeout="$seconds" -print_final_stats=1 "${dict[@]}" -artifact_prefix="$artifacts/" "$corpus"
}

# libFuzzer runs on one core, so `jobs` fuzzers run side by side, each for the whole budget:
# every fuzzer gets as much time as when they ran one after another, in 1/jobs of the wall time.
logs=$build/fuzz-logs
mkdir -p "$logs"
declare -A pids
for f in "${fuzzers[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  echo "== $f for ${seconds}s"
  run_fuzzer "$f" >"$logs/$f.log" 2>&1 &
  pids[$f]=$!
done

status=0
for f in "${fuzzers[@]}"; do
  if wait "${pids[$f]}"; then
    echo "== $f passed: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$f.log" |
                            grep -o '[0-9]*$') runs"
  else
    echo "== $f FAILED; inputs in $build/fuzz-artifacts/$f; its output:" >&2
    tail -n 60 "$logs/$f.log" >&2
    status=1
  fi
done
exit $status
