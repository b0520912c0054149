"""Statistics and options: engine counters, metrics, per-device shares, KV cache sizing."""
from __future__ import annotations

import os
import pathlib
import tempfile
import unittest

from tests.support import MODEL, PROMPT, Stack, pagoda


class StatsTest(unittest.TestCase):

    def test_counters_follow_the_requests(self) -> None:
        with Stack() as s:
            before = s.engine.stats()
            self.assertEqual((before.steps, before.generated_tokens), (0, 0))
            s.engine.generate(PROMPT, max_tokens=12, temperature=0)
            s.engine.generate(PROMPT, max_tokens=12, temperature=0)
            st = s.engine.stats()
            self.assertEqual(st.generated_tokens, 24)
            self.assertEqual(st.requests_finished, 2)
            self.assertEqual((st.requests_running, st.requests_waiting), (0, 0))
            m = s.engine.metrics()
            self.assertEqual(m.generation_tokens, 24)
            self.assertEqual(m.requests_finished_length, 2)
            self.assertEqual(m.time_to_first_token.count, 2)
            self.assertEqual(m.e2e_request_latency.count, 2)
            self.assertEqual(m.inter_token_latency.count, 22)
            h = m.time_to_first_token
            self.assertEqual(len(h.upper_bounds), len(h.cumulative_counts))
            self.assertEqual(list(h.upper_bounds), sorted(h.upper_bounds))
            self.assertLessEqual(h.cumulative_counts[-1], h.count)
            # The second request found the first one's prompt blocks? Only full blocks are
            # cached, and this prompt is shorter than one: queries, no hits.
            self.assertGreaterEqual(m.prefix_cache_queries, 0)
            kv = s.cache.stats()
            self.assertEqual(kv.sequences, 0)
            self.assertEqual(kv.blocks_total, kv.blocks_used + kv.blocks_free + kv.blocks_cached)

    def test_device_stats(self) -> None:
        with Stack() as s:
            self.assertEqual(s.engine.device_count(), 1)
            d = s.engine.device_stats(0)
            self.assertEqual(d.device, "cpu:0")
            self.assertEqual((d.first_layer, d.end_layer), (0, 5))
            self.assertEqual((d.tp_size, d.kvp_size), (1, 1))
            # The bundled model is dense: one expert group, no expert weights.
            self.assertEqual((d.ep_rank, d.ep_size, d.expert_weight_bytes), (0, 1, 0))
            self.assertGreater(d.weight_bytes, 0)
            self.assertGreater(d.kv_bytes, 0)
            with self.assertRaises(pagoda.InvalidArgumentError):
                s.engine.device_stats(1)

    def test_kv_cache_options(self) -> None:
        with pagoda.Model(MODEL) as model, pagoda.Mesh() as mesh:
            with pagoda.KvCache(model, mesh, block_size=8, num_blocks=40,
                                prefix_caching=False, dtype=pagoda.DType.F32) as cache:
                st = cache.stats()
                self.assertEqual((st.block_size, st.blocks_total), (8, 40))
                with pagoda.Engine(model, mesh, cache) as engine:
                    # 40 blocks of 8 tokens: a prompt of 400 tokens cannot fit.
                    with self.assertRaises(pagoda.InvalidArgumentError):
                        engine.submit([5] * 400, max_tokens=1)
            with self.assertRaises(pagoda.InvalidArgumentError):
                pagoda.KvCache(model, mesh, block_size=1000)

    def test_engine_options(self) -> None:
        with Stack(max_num_seqs=1, kv_reservation=pagoda.KvReservation.CONTIGUOUS,
                   preemption=pagoda.Preemption.RECOMPUTE) as s:
            a = s.engine.stream(PROMPT, max_tokens=8, temperature=0)
            b = s.engine.stream("The dog", max_tokens=8, temperature=0)
            self.assertEqual(len(a.text()) > 0 and len(b.text()) > 0, True)
            st = s.engine.stats()
            self.assertEqual(st.batched_sequences, st.steps)  # one sequence per step
        with self.assertRaises(pagoda.InvalidArgumentError):
            Stack(max_num_seqs=-3)
        with self.assertRaises(TypeError):
            Stack(max_num_seq=3)  # misspelt: refused, not ignored
        opts = pagoda.EngineOptions(max_num_batched_tokens=64)
        with pagoda.Model(MODEL) as model, pagoda.Mesh() as mesh, \
                pagoda.KvCache(model, mesh) as cache, \
                pagoda.Engine(model, mesh, cache, opts) as engine:
            self.assertEqual(len(engine.generate(PROMPT, max_tokens=3)[0].token_ids), 3)

    def test_kernel_choices(self) -> None:
        # The path reaches the C struct as bytes that the struct keeps alive.
        c = pagoda.EngineOptions(kernel_choices_file=pathlib.Path("k.json"),
                                 kernel_choice=pagoda.KernelChoice.RULES).to_c()
        self.assertEqual((c.kernel_choices_file, c.kernel_choice), (b"k.json", 2))
        self.assertIsNone(pagoda.EngineOptions().to_c().kernel_choices_file)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "choices.json")
            # Measured: one choice per product shape and power-of-two row count up to the
            # step's 4 tokens, written to the file.
            with Stack(max_num_batched_tokens=4, kernel_choice=pagoda.KernelChoice.MEASURE,
                       kernel_choices_file=path) as s:
                measured = s.engine.kernel_choices()
            self.assertTrue(measured, "MEASURE made no kernel choice")
            for choice in measured:
                with self.subTest(choice=choice):
                    self.assertIsInstance(choice, pagoda.KernelChoiceInfo)
                    self.assertIn(choice.variant, {"rules", "gemv", "gemv_int8", "sgemm"})
                    self.assertIn(choice.m, (1, 2, 4))
                    self.assertGreater(min(choice.n, choice.k), 0)
                    self.assertTrue(choice.device)
                    self.assertGreater(choice.rules_seconds, 0)
            self.assertTrue(os.path.exists(path))
            # Read back (FILE, the default): the same choices.
            with Stack(kernel_choices_file=pathlib.Path(path)) as s:
                read = s.engine.kernel_choices()

            def key(c: pagoda.KernelChoiceInfo) -> tuple:
                return (c.device, c.w_dtype, c.n, c.k, c.m, c.variant)

            self.assertEqual([key(c) for c in read], [key(c) for c in measured])
            with Stack(kernel_choice=pagoda.KernelChoice.RULES, kernel_choices_file=path) as s:
                self.assertEqual(s.engine.kernel_choices(), [])
            with self.assertRaises(pagoda.NotFoundError):
                Stack(kernel_choices_file=os.path.join(tmp, "missing.json"))

    def test_version_and_dtypes(self) -> None:
        self.assertEqual(pagoda.version_number() // 10000, 0)
        self.assertEqual(pagoda.version().count("."), 2)
        self.assertEqual(pagoda.dtype_size(pagoda.DType.BF16), 2)
        self.assertEqual(pagoda.dtype_name(pagoda.DType.BF16), "bf16")
        self.assertEqual(pagoda.dtype_size(pagoda.DType.INVALID), 0)


if __name__ == "__main__":
    unittest.main()
