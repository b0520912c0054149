"""pagoda.quantize: the bundled model rewritten in Q8_0 opens and generates; progress,
cancelling (by returning False or raising) and the library's errors."""
from __future__ import annotations

import os
import tempfile
import unittest

from tests.support import MODEL  # first: it puts the package on the path
import pagoda


class QuantizeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "q8.gguf")

    def tearDown(self) -> None:
        self.dir.cleanup()

    def test_q8_0_opens_and_generates(self) -> None:
        seen: list[tuple[float, str]] = []
        stats = pagoda.quantize(MODEL, self.out, pagoda.QuantType.Q8_0, threads=2,
                                progress=lambda f, stage: seen.append((f, stage)))
        self.assertEqual([t.name for t in stats.types], ["Q8_0"])
        self.assertGreater(stats.types[0].tensors, 0)
        self.assertLess(stats.types[0].relative_rmse, 0.01)
        self.assertEqual(stats.output_bytes, os.path.getsize(self.out))
        self.assertTrue(seen and seen[-1][0] == 1.0)
        with pagoda.Model(self.out) as model, pagoda.Mesh() as mesh, \
                pagoda.KvCache(model, mesh) as cache, pagoda.Engine(model, mesh, cache) as engine:
            [c] = engine.generate("Once upon a time", max_tokens=16, temperature=0, ignore_eos=True)
            self.assertEqual(len(c.token_ids), 16)

    def test_cancelling(self) -> None:
        with self.assertRaises(pagoda.CancelledError):
            pagoda.quantize(MODEL, self.out, progress=lambda f, stage: False)
        self.assertFalse(os.path.exists(self.out))

        def fails(fraction: float, stage: str) -> None:
            raise KeyError(stage)
        with self.assertRaises(KeyError):
            pagoda.quantize(MODEL, self.out, progress=fails)
        self.assertFalse(os.path.exists(self.out))

    def test_errors_carry_the_message(self) -> None:
        with self.assertRaises(pagoda.NotFoundError) as e:
            pagoda.quantize("/nonexistent/m.gguf", self.out)
        self.assertIn("/nonexistent/m.gguf", str(e.exception))
        pagoda.quantize(MODEL, self.out, pagoda.QuantType.Q8_0)
        with self.assertRaises(pagoda.UnsupportedError) as e:
            pagoda.quantize(self.out, self.out + ".again")
        self.assertIn("already Q8_0", str(e.exception))


if __name__ == "__main__":
    unittest.main()
