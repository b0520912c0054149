"""The example and the bench program run and print what they promise."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

from tests.support import BINDING, MODEL, PROMPT, Stack

EXAMPLE = os.path.join(BINDING, "examples", "stream_story.py")
BENCH = os.path.join(BINDING, "bench", "bench_stream.py")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-B", *args], capture_output=True, text=True,
                          timeout=120)


class ProgramTest(unittest.TestCase):

    def test_example_streams_the_story(self) -> None:
        with Stack() as s:
            story = s.engine.generate(PROMPT, max_tokens=40, temperature=0)[0].text
        p = run(EXAMPLE, "--model", MODEL, "--max-tokens", "40")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, PROMPT + story + "\n")
        self.assertIn("[40 tokens, length]", p.stderr)

    def test_example_reports_a_missing_model(self) -> None:
        p = run(EXAMPLE, "--model", "/nonexistent/model.gguf")
        self.assertEqual(p.returncode, 1)
        self.assertIn("PAGODA_ERR_NOT_FOUND", p.stderr)
        self.assertIn("/nonexistent/model.gguf", p.stderr)

    def test_bench_prints_one_line_per_repeat(self) -> None:
        p = run(BENCH, "--model", MODEL, "--prompt", PROMPT, "--max-tokens", "32",
                "--repeats", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\A(tokens_per_s \d+\.\d+\n){3}\Z")
        self.assertTrue(all(float(v) > 0 for v in re.findall(r"[\d.]+$", p.stdout, re.M)))

    def test_bench_refuses_bad_flags(self) -> None:
        p = run(BENCH, "--model", MODEL, "--prompt", PROMPT, "--max-tokens", "0",
                "--repeats", "1")
        self.assertNotEqual(p.returncode, 0)


if __name__ == "__main__":
    unittest.main()
