#!/usr/bin/env python3
"""Streaming throughput through the Python binding, the counterpart of the C
``pagoda-bench-stream``: same flags and defaults, same loop, same output lines.

Each repeat submits one greedy request (ignoring end-of-sequence, so every repeat generates
``--max-tokens``), then steps and polls until it has finished, counting the tokens the polls
return and decoding every piece of text as a streaming user would. It prints one line
``tokens_per_s <float>`` per repeat. With ``--paced``, each repeat waits for a line on standard
input, until its end (as the C benchmark's ``--paced``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import pagoda  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="GGUF file or Hugging Face folder")
    parser.add_argument("--prompt", default="Once upon a time", help="prompt text")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="requests, one at a time")
    parser.add_argument("--paced", action="store_true",
                        help="one request per line of standard input, until its end")
    args = parser.parse_args()
    if args.max_tokens < 1 or args.repeats < 1:
        parser.error("--max-tokens and --repeats must be at least 1")

    with pagoda.Model(args.model) as model, pagoda.Mesh() as mesh, \
            pagoda.KvCache(model, mesh) as cache, pagoda.Engine(model, mesh, cache) as engine:
        options = pagoda.RequestOptions(max_tokens=args.max_tokens, temperature=0,
                                        ignore_eos=True)
        for _ in (sys.stdin if args.paced else range(args.repeats)):
            start = time.perf_counter()
            with engine.stream(args.prompt, options) as stream:
                chars = 0
                for piece in stream:  # every token's text, decoded to str
                    chars += len(piece)
            seconds = time.perf_counter() - start
            tokens = len(stream.token_ids)
            if tokens != args.max_tokens or stream.finish_reason != pagoda.FinishReason.LENGTH:
                print(f"bench_stream: {tokens} tokens, finish {stream.finish_reason!r}; expected "
                      f"{args.max_tokens} and LENGTH", file=sys.stderr)
                return 1
            print(f"tokens_per_s {tokens / seconds:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
