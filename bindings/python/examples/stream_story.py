#!/usr/bin/env python3
"""Streams a story from the bundled stories260K through the Python binding.

    PAGODA_LIBRARY=build/lib/libpagoda.so python3 bindings/python/examples/stream_story.py \\
        [--model PATH] [--prompt TEXT] [--max-tokens N] [--temperature T] [--seed S]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the pagoda package, run from the source tree
import pagoda  # noqa: E402

BUNDLED = os.path.join(HERE, os.pardir, os.pardir, os.pardir, "tests", "fixtures", "models",
                       "stories260K", "stories260K.gguf")


def main() -> int:
    parser = argparse.ArgumentParser(description="Stream a story from a small model.")
    parser.add_argument("--model", default=os.path.normpath(BUNDLED), help="GGUF file or folder")
    parser.add_argument("--prompt", default="Once upon a time", help="the story's beginning")
    parser.add_argument("--max-tokens", type=int, default=200, help="tokens at most")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    args = parser.parse_args()

    try:
        with pagoda.Model(args.model) as model, pagoda.Mesh() as mesh, \
                pagoda.KvCache(model, mesh) as cache, \
                pagoda.Engine(model, mesh, cache) as engine:
            print(args.prompt, end="", flush=True)
            with engine.stream(args.prompt, max_tokens=args.max_tokens,
                               temperature=args.temperature, seed=args.seed) as story:
                for piece in story:
                    print(piece, end="", flush=True)
            print()
            print(f"[{len(story.token_ids)} tokens, {story.finish_reason.name.lower()}]",
                  file=sys.stderr)
    except pagoda.PagodaError as e:
        print(f"stream_story: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
