#!/usr/bin/env bash
# tests/gpu/run.sh: validates the CUDA backend on a machine with an NVIDIA GPU, in one command.
#
#   tests/gpu/run.sh [BUILD_DIR]        (default BUILD_DIR: build-gpu beside this checkout's root)
#
# Steps, each reported as PASS/FAIL/SKIP in a summary at the end:
#   1. configure and build: Release, -DPAGODA_WITH_CUDA=ON, benchmarks on, CUDA architectures
#      from $CUDA_ARCHS (default "native", i.e. the GPUs of this machine);
#   2. ctest for the labels "cuda" and "conformance" (the backend conformance suite compares every
#      op of the CUDA backend with the CPU backend; PAGODA_CONFORMANCE_REQUIRE_CUDA=1 makes a CUDA
#      backend that cannot start a failure instead of a skip, and a test that skips itself here
#      counts as a failure too);
#   3. compute-sanitizer --tool memcheck, then --tool racecheck, over every test labelled "cuda"
#      (skipped with a message when compute-sanitizer is not installed);
#   4. pagoda-bench-kernels --backend cuda, saved as JSON lines, and a table of the device, each
#      benchmark's figure, its goal and the share of the goal reached;
#   5. pagoda-bench-generate --random-model 1b --dtype bf16 --device cuda:0: end-to-end prefill
#      and decode of a random-weight Llama-3.2-1B through the public API at batch 1 and
#      $GENERATE_BATCH, decode with graphs and op by op side by side; each decode's fraction of
#      the roofline (weight + KV bytes per step at the device's copy bandwidth) joins the
#      summary as PASS (at or above its goal) or BELOW;
#   6. the same shape in F16 quantized by `pagoda quantize` to each of $QUANT_TYPES (default
#      "q8_0 q4_k_m"; empty skips the step), each served on cuda:0 as in step 5; first its
#      kernels are timed by `pagoda tune` (the CUDA backend's gemv and gemm routes per product
#      shape, up to $TUNE_TOKENS rows, default 64; its table in LOGS/tune-TYPE.txt), and with
#      TUNED=1 the model is served a second time with those choices.
# Exits non-zero if any step failed. Benchmarks below their goals are reported, not failed.
#
# Environment: CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES, default native), JOBS (build jobs, default
# every core), STEPS (the steps to run, default "build test sanitize kernels generate
# quantized"; without build, BUILD_DIR is used as it is, e.g. a build packed by
# tests/gpu/pack.sh), SANITIZE_TOOLS (default "memcheck racecheck"), SANITIZE_TESTS (a ctest
# regex of the tests to sanitize; default every test labelled cuda), TEST_TIMEOUT (seconds a
# test may take, 120), SANITIZE_TIMEOUT (the same under a sanitizer, default 4 × TEST_TIMEOUT),
# BENCH_TIMEOUT (seconds each benchmark may take, 300), LOGS (the logs folder, default
# BUILD_DIR/gpu-validation), BENCH_ARGS (extra arguments for the kernels benchmark, e.g.
# "--quick"), SANITIZE_ALSO (extra ctest regex of tests to run under the sanitizers, e.g.
# "test_backend_conformance$"), GENERATE_BATCH (the decode benchmark's larger batch, default
# 64), GENERATE_ARGS (extra arguments for it, e.g. "--quick" or "--repeats 5"), QUANT_TYPES,
# TUNE_TOKENS and TUNED (step 6).
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
CUDA_ARCHS="${CUDA_ARCHS:-native}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
BENCH_ARGS="${BENCH_ARGS:-}"
GENERATE_BATCH="${GENERATE_BATCH:-64}"
GENERATE_ARGS="${GENERATE_ARGS:-}"
QUANT_TYPES="${QUANT_TYPES-q8_0 q4_k_m}"
STEPS="${STEPS:-build test sanitize kernels generate quantized}"
SANITIZE_TOOLS="${SANITIZE_TOOLS:-memcheck racecheck}"
SANITIZE_TESTS="${SANITIZE_TESTS:-}"
TEST_TIMEOUT="${TEST_TIMEOUT:-120}"
SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-$((TEST_TIMEOUT * 4))}"
LOGS="${LOGS:-$BUILD/gpu-validation}"

declare -a SUMMARY=()
FAILED=0

wanted_step() { [[ " $STEPS " == *" $1 "* ]]; }
note() { printf '\n=== %s\n' "$*"; }
record() { # record STEP STATUS [DETAIL]
    SUMMARY+=("$(printf '%-34s %-5s %s' "$1" "$2" "${3:-}")")
    if [ "$2" = FAIL ]; then FAILED=1; fi
}

# --- 1. configure and build ---------------------------------------------------------------------
if ! wanted_step build; then
    record "configure and build" SKIP "STEPS: using $BUILD as it is"
else
    note "configure and build ($BUILD, CUDA architectures: $CUDA_ARCHS)"
    GENERATOR=()
    if command -v ninja >/dev/null 2>&1; then GENERATOR=(-G Ninja); fi
    if ! cmake -S "$ROOT" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
            -DPAGODA_WITH_CUDA=ON -DPAGODA_BUILD_BENCH=ON -DPAGODA_BUILD_TESTS=ON \
            -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS"; then
        record "configure" FAIL
        printf '%s\n' "${SUMMARY[@]}"
        exit 1
    fi
    if ! cmake --build "$BUILD" -j "$JOBS"; then
        record "build" FAIL
        printf '%s\n' "${SUMMARY[@]}"
        exit 1
    fi
    record "configure and build" PASS
fi
mkdir -p "$LOGS"

if command -v nvidia-smi >/dev/null 2>&1; then
    note "devices"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
fi

# --- 2. tests -----------------------------------------------------------------------------------
if wanted_step test; then
    note "ctest -L 'cuda|conformance'"
    export PAGODA_CONFORMANCE_REQUIRE_CUDA=1
    if ctest --test-dir "$BUILD" -L 'cuda|conformance' --timeout "$TEST_TIMEOUT" --output-on-failure 2>&1 | tee "$LOGS/ctest.log"; then
        # A CUDA test that skips itself (no device, exit code 77) has proven nothing on a GPU machine.
        if grep -q -E '\*\*\*Skipped|Not Run' "$LOGS/ctest.log"; then
            record "ctest cuda|conformance" FAIL "some tests skipped themselves (see $LOGS/ctest.log)"
        else
            record "ctest cuda|conformance" PASS
        fi
    else
        record "ctest cuda|conformance" FAIL "see $LOGS/ctest.log"
    fi
fi

# --- 3. compute-sanitizer -----------------------------------------------------------------------
# The commands of the tests to sanitize, one per line, taken from CTest itself.
sanitized_commands() {
    local regex_args=(-L cuda)
    if [ -n "$SANITIZE_TESTS" ]; then regex_args=(-R "$SANITIZE_TESTS"); fi
    ctest --test-dir "$BUILD" "${regex_args[@]}" --show-only=json-v1 > "$LOGS/cuda-tests.json"
    if [ -n "${SANITIZE_ALSO:-}" ]; then
        ctest --test-dir "$BUILD" -R "$SANITIZE_ALSO" --show-only=json-v1 > "$LOGS/also-tests.json"
    else
        echo '{"tests": []}' > "$LOGS/also-tests.json"
    fi
    python3 - "$LOGS/cuda-tests.json" "$LOGS/also-tests.json" <<'PY'
import json, shlex, sys
seen = set()
for path in sys.argv[1:]:
    for test in json.load(open(path)).get("tests", []):
        if test["name"] in seen:
            continue
        seen.add(test["name"])
        # CTest gives no command for a test whose executable is missing: an empty one here.
        command = test.get("command") or []
        print(test["name"] + "\t" + " ".join(shlex.quote(c) for c in command))
PY
}

SANITIZER="$(command -v compute-sanitizer || true)"
if [ -z "$SANITIZER" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    SANITIZER=/usr/local/cuda/bin/compute-sanitizer
fi
if ! wanted_step sanitize; then
    :
elif [ -z "$SANITIZER" ]; then
    echo "skipping compute-sanitizer: not installed (looked on PATH and in /usr/local/cuda/bin)"
    record "compute-sanitizer" SKIP "not installed"
elif ! command -v python3 >/dev/null 2>&1; then
    echo "skipping compute-sanitizer: python3 is needed to read the test list"
    record "compute-sanitizer" SKIP "no python3"
else
    mapfile -t TESTS < <(sanitized_commands)
    for tool in $SANITIZE_TOOLS; do
        note "compute-sanitizer --tool $tool over ${#TESTS[@]} test(s)"
        for entry in "${TESTS[@]}"; do
            name="${entry%%$'\t'*}"
            command="${entry#*$'\t'}"
            log="$LOGS/$tool-$name.log"
            if [ -z "$command" ]; then
                record "$tool $name" FAIL "its executable was not built"
                continue
            fi
            # The environment CTest would give the test; exit code 77 is a test skipping itself.
            # API errors are not reported: the tests provoke some on purpose (an event without
            # timing) and NCCL's start-up probes kernels of other architectures; both are checked
            # by the tests' own assertions, and the sanitizer is here for memory and races.
            eval "env PAGODA_BACKEND_PATH= PAGODA_LOG_LEVEL=error timeout $SANITIZE_TIMEOUT \"$SANITIZER\" --tool $tool \
                --report-api-errors no --error-exitcode 99 $command" > "$log" 2>&1
            rc=$?
            if [ $rc -eq 0 ]; then
                record "$tool $name" PASS
            elif [ $rc -eq 77 ]; then
                record "$tool $name" FAIL "the test skipped itself (no device?): $log"
            else
                record "$tool $name" FAIL "exit $rc: $log"
                tail -n 30 "$log"
            fi
        done
    done
fi

# --- 4. benchmarks ------------------------------------------------------------------------------
if wanted_step kernels; then
    note "pagoda-bench-kernels --backend cuda $BENCH_ARGS"
    BENCH="$BUILD/bin/pagoda-bench-kernels"
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of words
    if timeout "${BENCH_TIMEOUT:-300}" "$BENCH" --backend cuda $BENCH_ARGS > "$LOGS/bench.jsonl" 2> "$LOGS/bench.err"; then
        record "pagoda-bench-kernels" PASS "$LOGS/bench.jsonl"
    else
        record "pagoda-bench-kernels" FAIL "see $LOGS/bench.err"
        tail -n 20 "$LOGS/bench.err"
    fi
    if [ -s "$LOGS/bench.jsonl" ] && command -v python3 >/dev/null 2>&1; then
        python3 - "$LOGS/bench.jsonl" <<'PY'
import json, sys
lines = []
for raw in open(sys.argv[1]):
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            lines.append(json.loads(raw))
        except ValueError:
            pass
info = next((l for l in lines if l.get("bench") == "info"), {})
print("\ndevice: %s (%s)" % (info.get("device", "?"), info.get("arch", "?")))
print("%-24s %-56s %-27s %9s %5s %8s" % ("benchmark", "case", "figure", "value", "goal", "of goal"))
keys = ("n_seqs", "context", "q_len", "block_size", "cache_dtype", "m", "n", "k", "w_dtype")
below = 0
for l in lines:
    if "figure" not in l and "skipped" not in l:
        continue
    case = " ".join("%s=%s" % (k, l[k]) for k in keys if k in l)[:56]
    if "skipped" in l:
        print("%-24s %-56s skipped: %s" % (l["bench"], case, str(l["skipped"])[:70]))
        continue
    figure, goal = l.get("figure"), l.get("goal")
    share = "%7.0f%%" % (100.0 * figure / goal) if figure is not None and goal else "       -"
    if figure is not None and goal and figure < goal:
        below += 1
    print("%-24s %-56s %-27s %9s %5s %s" % (l["bench"], case, l.get("figure_name", "")[:27],
          "%.4g" % figure if figure is not None else "null", "%.3g" % goal if goal else "-", share))
print("\n%d measurement(s) below their goal. Figures: decode attention as a fraction of the measured" % below)
print("device-to-device copy bandwidth (goal 0.85), prefill attention as a fraction of cuBLAS's bf16")
print("GEMM peak (goal 0.6), matmuls as cuBLAS time / ours (goal 1: as fast as plain cuBLAS),")
print("matmuls on GGUF block weights (no cuBLAS equivalent) as a fraction of the copy bandwidth.")
PY
    fi
fi

# --- 5. end-to-end decode ----------------------------------------------------------------------
# Batch 1 is the latency case, where a step is one pass over the weights; batch 64 is a serving
# batch whose matmuls still read each weight once per step (64 rows stay far below the GPU's
# FLOP/byte ridge), so both are judged against the same bandwidth roofline.
GENERATE="$BUILD/bin/pagoda-bench-generate"

# generate_step NAME COMMAND...: runs a pagoda-bench-generate command into $LOGS/NAME.jsonl
# (stderr NAME.err), prints its table and records one summary row per decode measurement.
generate_step() {
    local name=$1
    shift
    note "$* $GENERATE_ARGS"
    # shellcheck disable=SC2086  # GENERATE_ARGS is a list of words
    if timeout "${BENCH_TIMEOUT:-300}" "$@" $GENERATE_ARGS > "$LOGS/$name.jsonl" 2> "$LOGS/$name.err"; then
        record "$name" PASS "$LOGS/$name.jsonl"
        cat "$LOGS/$name.err"
    else
        record "$name" FAIL "see $LOGS/$name.err"
        tail -n 20 "$LOGS/$name.err"
    fi
    [ -s "$LOGS/$name.jsonl" ] && command -v python3 >/dev/null 2>&1 || return 0
    # Prints the table; writes one summary row per decode line to NAME-summary.tsv (step,
    # status, detail).
    python3 - "$LOGS/$name.jsonl" "$LOGS/$name-summary.tsv" <<'PY'
import json, sys
lines = []
for raw in open(sys.argv[1]):
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            lines.append(json.loads(raw))
        except ValueError:
            pass
copy = next((l for l in lines if l.get("measurement") == "device_copy_bandwidth"), {})
print("\ndevice: %s (%s), copy bandwidth %.0f GB/s (read + written)" % (
      copy.get("device", "?"), copy.get("device_name", "?"), copy.get("gb_per_s") or 0.0))
print("%-12s %5s %11s %9s %10s %10s %9s %5s %8s" % ("measurement", "batch", "tokens/s", "ms/step",
      "weights GB", "KV MB/step", "roofline", "goal", "of goal"))
rows = []
for l in lines:
    if l.get("measurement") == "decode_graph_speedup":
        print("%-12s %5d %11.1f   (op by op; decode graphs %.2fx as fast)" % ("decode eager",
              l["batch"], l["op_by_op_tokens_per_s"], l["speedup"]))
        rows.append("decode graphs vs op by op batch %d\tINFO\t%.2fx (%.1f vs %.1f tokens/s)" % (
                    l["batch"], l["speedup"], l["graphs_tokens_per_s"], l["op_by_op_tokens_per_s"]))
        continue
    if l.get("measurement") not in ("prefill", "decode"):
        continue
    if l["measurement"] == "prefill":
        print("%-12s %5d %11.1f" % ("prefill", l["batch"], l["tokens_per_s"]))
        continue
    figure, goal = l.get("figure"), l.get("goal")
    share = 100.0 * figure / goal if figure is not None and goal else None
    print("%-12s %5d %11.1f %9.3f %10.3f %10.2f %9.3f %5.2g %7.0f%%" % ("decode", l["batch"],
          l["tokens_per_s"], l["ms_per_step"], l["weight_bytes_per_step"] / 1e9,
          l["kv_bytes_per_step"] / 1e6, figure if figure is not None else float("nan"),
          goal or 0.0, share if share is not None else float("nan")))
    status = "PASS" if figure is not None and goal and figure >= goal else "BELOW"
    rows.append("decode %s batch %d\t%s\t%.3f of roofline (goal %.2g), %.1f tokens/s, %.3f ms/step" % (
                l["model"], l["batch"], status, figure if figure is not None else float("nan"),
                goal or 0.0, l["tokens_per_s"], l["ms_per_step"]))
print("\nroofline: (weights + KV bytes each decode step reads) / step time / the copy bandwidth.")
with open(sys.argv[2], "w") as out:
    out.write("".join(r + "\n" for r in rows))
PY
    if [ -s "$LOGS/$name-summary.tsv" ]; then
        while IFS=$'\t' read -r step status detail; do
            record "$step" "$status" "$detail"
        done < "$LOGS/$name-summary.tsv"
    fi
}

if wanted_step generate; then
    generate_step generate "$GENERATE" --random-model 1b --dtype bf16 --device cuda:0 \
        --batch "$GENERATE_BATCH" --prompt-tokens 128 --gen-tokens 128 --repeats 3 \
        --decode-graphs compare
fi

# --- 6. quantized models end to end ---------------------------------------------------------
# The same random 1B shape written as F16, quantized by `pagoda quantize` to each of
# $QUANT_TYPES, then served on cuda:0 (block GEMVs for decode, decoded panels for prefill).
if wanted_step quantized && [ -n "$QUANT_TYPES" ]; then
    models=$(mktemp -d)
    if timeout "${BENCH_TIMEOUT:-300}" "$GENERATE" --random-model 1b --dtype f16 \
            --write-model "$models/f16.gguf" > "$LOGS/quantize.log" 2>&1; then
        for type in $QUANT_TYPES; do
            if ! timeout "${BENCH_TIMEOUT:-300}" "$BUILD/bin/pagoda" quantize "$models/f16.gguf" \
                    "$models/$type.gguf" --type "$type" --quiet >> "$LOGS/quantize.log" 2>&1; then
                record "pagoda quantize $type" FAIL "see $LOGS/quantize.log"
                continue
            fi
            if timeout "${BENCH_TIMEOUT:-300}" "$BUILD/bin/pagoda" tune --model "$models/$type.gguf" \
                    --device cuda:0 --max-tokens "${TUNE_TOKENS:-64}" \
                    --out "$LOGS/kernels-$type.json" > "$LOGS/tune-$type.txt" 2>&1; then
                record "pagoda tune $type" PASS "table in $LOGS/tune-$type.txt"
            else
                record "pagoda tune $type" FAIL "see $LOGS/tune-$type.txt"
            fi
            generate_step "generate-$type" "$GENERATE" --model "$models/$type.gguf" \
                --device cuda:0 --batch "$GENERATE_BATCH" --prompt-tokens 128 --gen-tokens 128 \
                --repeats 3
            if [ "${TUNED:-0}" = 1 ] && [ -f "$LOGS/kernels-$type.json" ]; then
                generate_step "generate-$type-tuned" "$GENERATE" --model "$models/$type.gguf" \
                    --device cuda:0 --batch "$GENERATE_BATCH" --prompt-tokens 128 \
                    --gen-tokens 128 --repeats 3 --kernel-choices "$LOGS/kernels-$type.json"
            fi
            rm -f "$models/$type.gguf"
        done
    else
        record "random 1b f16 model" FAIL "see $LOGS/quantize.log"
    fi
    rm -rf "$models"
fi

# --- summary ------------------------------------------------------------------------------------
note "summary"
printf '%s\n' "${SUMMARY[@]}"
if [ $FAILED -ne 0 ]; then
    echo "GPU validation FAILED"
    exit 1
fi
echo "GPU validation passed"
