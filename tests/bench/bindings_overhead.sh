#!/usr/bin/env bash
# The bindings' streaming overhead: tokens/s of one streamed greedy request through the C API
# (pagoda-bench-stream) and through each binding's bench (Rust, Go, Python), run one after the
# other in each round so that all of them see the same machine state, and reported as ratios
# binding / C per round, then as the median with its range over the rounds.
#
#   tests/bench/bindings_overhead.sh [BUILD_DIR] [--rounds N] [--max-tokens T] [--repeats R]
#
# Each program makes its engine once, then times R requests of T tokens and prints a line
# `tokens_per_s <x>` per request; a round takes each program's median over its R requests.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
if [[ $# -gt 0 && $1 != --* ]]; then build=$(cd "$1" && pwd); shift; fi
rounds=3 max_tokens=256 repeats=5
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) rounds=$2 ;;
        --max-tokens) max_tokens=$2 ;;
        --repeats) repeats=$2 ;;
        *) echo "usage: $0 [BUILD_DIR] [--rounds N] [--max-tokens T] [--repeats R]" >&2; exit 2 ;;
    esac
    shift 2
done

model=$root/tests/fixtures/models/stories260K/stories260K.gguf
cmake --build "$build" --target pagoda-bench-stream pagoda-bench-stream-rust pagoda-bench-stream-go >/dev/null
export PAGODA_BACKEND_PATH= PAGODA_LOG_LEVEL=error PAGODA_LIBRARY=$build/lib/libpagoda.so
python=/usr/bin/python3
[[ -x $python ]] || python=python3
flags=(--model "$model" --max-tokens "$max_tokens" --repeats "$repeats")
declare -A run=(
    [c]="$build/bin/pagoda-bench-stream"
    [rust]="$build/bin/pagoda-bench-stream-rust"
    [go]="$build/bin/pagoda-bench-stream-go"
    [python]="$python -B $root/bindings/python/bench/bench_stream.py"
)
order=(c rust go python)

# Median of the tokens_per_s lines a program prints.
median_rate() {
    # shellcheck disable=SC2086
    $1 "${flags[@]}" | awk '$1 == "tokens_per_s" { print $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print v[int((NR + 1) / 2)] }'
}

declare -A ratios
for ((r = 1; r <= rounds; r++)); do
    declare -A rate=()
    for name in "${order[@]}"; do rate[$name]=$(median_rate "${run[$name]}"); done
    line="round $r: C ${rate[c]} tok/s"
    for name in rust go python; do
        ratio=$(awk -v b="${rate[$name]}" -v c="${rate[c]}" 'BEGIN { printf "%.3f", b / c }')
        ratios[$name]+="$ratio "
        line+=", $name ${rate[$name]} (${ratio}x)"
    done
    echo "$line"
done
for name in rust go python; do
    printf '%s / C: ' "$name"
    tr ' ' '\n' <<<"${ratios[$name]}" | grep . | sort -g |
        awk '{ v[NR] = $1 } END { printf "median %.3f (min %.3f, max %.3f) over %d rounds\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done
