"""Handles: closing, context managers, closing in the "wrong" order, use after close."""
from __future__ import annotations

import gc
import unittest

from tests.support import MODEL, PROMPT, Stack, pagoda


class LifetimeTest(unittest.TestCase):

    def test_cache_closed_before_the_engine(self) -> None:
        # The engine keeps the cache (and model and mesh) alive: closing their handles first
        # must neither crash (the ASan build runs this) nor change what the engine does.
        with Stack() as ref:
            expected = ref.engine.generate(PROMPT, max_tokens=32, temperature=0)[0].text
        s = Stack()
        s.cache.close()
        s.model.close()
        s.mesh.close()
        self.assertEqual(s.engine.generate(PROMPT, max_tokens=32, temperature=0)[0].text,
                         expected)
        s.engine.close()

    def test_cache_closed_mid_stream(self) -> None:
        with Stack() as s:
            with s.engine.stream(PROMPT, max_tokens=32, temperature=0) as st:
                first = next(st)
                s.cache.close()
                rest = "".join(st)
            self.assertEqual(len(st.token_ids), 32)
            self.assertTrue(first and rest)

    def test_close_is_idempotent(self) -> None:
        s = Stack()
        for _ in range(2):
            s.close()
        self.assertTrue(all(h.closed for h in (s.engine, s.cache, s.mesh, s.model)))

    def test_use_after_close_raises_before_reaching_the_library(self) -> None:
        s = Stack()
        tok = s.model.tokenizer()
        s.close()
        tok.close()
        for call in (s.engine.stats, lambda: s.engine.submit(PROMPT), s.engine.step,
                     s.cache.stats, s.model.info, s.mesh.device_count,
                     lambda: tok.encode("x"),
                     lambda: pagoda.KvCache(s.model, s.mesh)):
            with self.assertRaises(pagoda.ClosedError):
                call()
        self.assertIsInstance(pagoda.ClosedError("x"), pagoda.InvalidHandleError)

    def test_with_blocks_close(self) -> None:
        with pagoda.Model(MODEL) as model, pagoda.Mesh() as mesh:
            with pagoda.KvCache(model, mesh) as cache, \
                    pagoda.Engine(model, mesh, cache) as engine:
                self.assertEqual(len(engine.generate(PROMPT, max_tokens=3)[0].token_ids), 3)
        self.assertTrue(engine.closed and cache.closed and mesh.closed and model.closed)

    def test_garbage_collected_in_any_order(self) -> None:
        s = Stack()
        engine = s.engine
        del s
        gc.collect()  # the model, mesh and cache objects may go first
        self.assertEqual(len(engine.generate(PROMPT, max_tokens=3)[0].token_ids), 3)
        stream = engine.stream(PROMPT, max_tokens=50)
        next(iter(stream))
        del engine
        gc.collect()  # the stream still holds the engine
        self.assertTrue("".join(stream))

    def test_tokenizer_outlives_its_model(self) -> None:
        model = pagoda.Model(MODEL)
        tok = model.tokenizer()
        model.close()
        self.assertEqual(tok.decode(tok.encode(PROMPT), skip_special=True), PROMPT)
        tok.close()

    def test_engine_closed_while_a_stream_is_open(self) -> None:
        s = Stack()
        st = s.engine.stream(PROMPT, max_tokens=50)
        next(st)
        s.close()
        with self.assertRaises(pagoda.ClosedError):
            next(st)
        st.close()  # the request went with the engine: nothing left to abort


if __name__ == "__main__":
    unittest.main()
