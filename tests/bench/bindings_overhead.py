#!/usr/bin/env python3
"""The bindings' streaming overhead: tokens/s of one streamed greedy request through the C API
(pagoda-bench-stream) and through each binding's bench (Rust, Go, Python), side by side.

    tests/bench/bindings_overhead.py [--build DIR] [--rounds N] [--per-turn K] [--max-tokens T]

The four benches start once and wait (``--paced``); each round then gives each of them a turn
of K requests, one program after the other in an order rotated every round, so that a round's
turns run within a fraction of a second of each other. This machine's speed drifts over
seconds, which whole-program runs one after the other mistake for overhead; within a round the
drift is shared. A turn's rate is the median of its K requests (its first request runs on
caches the previous program left cold, in every program alike). Each round gives a ratio
binding / C, and the report is the median ratio with its quartiles and range over the rounds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINDINGS = ("rust", "go", "python")


def commands(build: Path) -> dict[str, list[str]]:
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    return {
        "c": [str(build / "bin/pagoda-bench-stream")],
        "rust": [str(build / "bin/pagoda-bench-stream-rust")],
        "go": [str(build / "bin/pagoda-bench-stream-go")],
        "python": [python, "-B", str(ROOT / "bindings/python/bench/bench_stream.py")],
    }


class Bench:
    """One bench program, started paced: each call of request() runs one timed request."""

    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def turn(self, requests: int) -> float:
        """Runs `requests` requests one after the other; the median of their tokens/s."""
        self.proc.stdin.write("\n" * requests)
        self.proc.stdin.flush()
        rates = []
        for _ in range(requests):
            line = self.proc.stdout.readline().split()
            if len(line) != 2 or line[0] != "tokens_per_s":
                self.proc.kill()
                raise SystemExit(f"bindings_overhead: the {self.name} bench answered {line!r} "
                                 f"(exit status {self.proc.wait()})")
            rates.append(float(line[1]))
        return statistics.median(rates)

    def close(self) -> None:
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise SystemExit(f"bindings_overhead: the {self.name} bench exited with "
                             f"{self.proc.returncode}")


def quantiles(values: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="build folder")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of four turns")
    parser.add_argument("--per-turn", type=int, default=5, help="requests in one turn")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per request")
    parser.add_argument("--warmup", type=int, default=1, help="rounds left out first")
    args = parser.parse_args()
    if args.rounds < 2 or args.per_turn < 1 or args.max_tokens < 1 or args.warmup < 0:
        parser.error("--rounds must be at least 2, --per-turn and --max-tokens at least 1")

    subprocess.run(["cmake", "--build", str(args.build), "--target", "pagoda-bench-stream",
                    "pagoda-bench-stream-rust", "pagoda-bench-stream-go"],
                   check=True, stdout=subprocess.DEVNULL)
    os.environ.update(PAGODA_BACKEND_PATH="", PAGODA_LOG_LEVEL="error",
                      PAGODA_LIBRARY=str(args.build / "lib/libpagoda.so"))
    model = ROOT / "tests/fixtures/models/stories260K/stories260K.gguf"
    flags = ["--model", str(model), "--max-tokens", str(args.max_tokens), "--paced"]
    benches = [Bench(name, argv + flags) for name, argv in commands(args.build).items()]
    rates: dict[str, list[float]] = {b.name: [] for b in benches}
    ratios: dict[str, list[float]] = {name: [] for name in BINDINGS}
    try:
        for r in range(args.warmup + args.rounds):
            shift = r % len(benches)
            this_round = {b.name: b.turn(args.per_turn) for b in benches[shift:] + benches[:shift]}
            if r < args.warmup:
                continue
            for name, rate in this_round.items():
                rates[name].append(rate)
            for name in BINDINGS:
                ratios[name].append(this_round[name] / this_round["c"])
    finally:
        for b in benches:
            b.close()

    q1, median, q3 = quantiles(rates["c"])
    print(f"C: median {median:.0f} tok/s (quartiles {q1:.0f}-{q3:.0f}) over {args.rounds} "
          f"turns of {args.per_turn} requests of {args.max_tokens} tokens")
    for name in BINDINGS:
        q1, median, q3 = quantiles(ratios[name])
        print(f"{name} / C: median {median:.3f} (quartiles {q1:.3f}-{q3:.3f}, range "
              f"{min(ratios[name]):.3f}-{max(ratios[name]):.3f}) over {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
