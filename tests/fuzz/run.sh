#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each tests/fuzz/fuzz_*.cpp for <seconds>.
#   tests/fuzz/run.sh <seconds> [fuzzer...]      (default: every fuzzer)
# Environment: BUILD_DIR (default build-fuzz), JOBS (default 2).
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
jobs=${JOBS:-2}

if [[ $# -gt 0 ]]; then
  fuzzers=("$@")
else
  fuzzers=()
  for src in "$root"/tests/fuzz/fuzz_*.cpp; do
    fuzzers+=("$(basename "$src" .cpp)")
  done
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPAGODA_BUILD_FUZZERS=ON -DPAGODA_BUILD_TESTS=ON -DPAGODA_WITH_CUDA=OFF \
  -DPAGODA_BUILD_BENCH=OFF -DPAGODA_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${fuzzers[@]}"

status=0
for f in "${fuzzers[@]}"; do
  corpus=$build/fuzz-corpus/$f
  artifacts=$build/fuzz-artifacts/$f
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
  dict=()
  [[ -f $root/tests/fuzz/corpus/$f.dict ]] && dict=(-dict="$root/tests/fuzz/corpus/$f.dict")
  echo "== $f for ${seconds}s"
  if ! "$build/bin/$f" -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" \
      -artifact_prefix="$artifacts/" "$corpus"; then
    echo "== $f FAILED; inputs in $artifacts" >&2
    status=1
  fi
done
exit $status
