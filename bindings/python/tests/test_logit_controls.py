"""Logit controls and seeds through the binding: a bias that forces a token, allowed ids, bad
words, min_tokens, and seed=None (a fresh seed per request) against a fixed seed."""
from __future__ import annotations

from tests.support import PROMPT, StackTest, pagoda


class LogitControlsTest(StackTest):

    def test_bias_forces_a_token(self) -> None:
        c = self.engine.generate(PROMPT, max_tokens=8, ignore_eos=True, seed=1,
                                 logit_bias={300: 100.0, 1: -100.0})[0]
        self.assertEqual(c.token_ids, [300] * 8)

    def test_allowed_ids_only(self) -> None:
        allowed = {100, 200, 201, 350}
        c = self.engine.generate(PROMPT, max_tokens=16, ignore_eos=True, seed=2,
                                 allowed_token_ids=sorted(allowed))[0]
        self.assertEqual(len(c.token_ids), 16)
        self.assertTrue(set(c.token_ids) <= allowed)

    def test_bad_words_and_min_tokens(self) -> None:
        greedy = self.engine.generate(PROMPT, max_tokens=6, temperature=0, ignore_eos=True)[0]
        banned = self.engine.generate(PROMPT, max_tokens=6, temperature=0, ignore_eos=True,
                                      bad_words=[[greedy.token_ids[0]]])[0]
        self.assertNotEqual(banned.token_ids[0], greedy.token_ids[0])
        c = self.engine.generate(PROMPT, max_tokens=40, temperature=0, min_tokens=30)[0]
        self.assertGreaterEqual(len(c.token_ids), 30)

    def test_seed_none_differs_and_a_seed_repeats(self) -> None:
        def run(seed: int | None) -> list[int]:
            return self.engine.generate(PROMPT, max_tokens=32, temperature=1.0, ignore_eos=True,
                                        seed=seed)[0].token_ids
        self.assertNotEqual(run(None), run(None))
        self.assertEqual(run(11), run(11))

    def test_bad_values_are_refused(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.engine.submit(PROMPT, logit_bias={3: 250.0})
        with self.assertRaises(TypeError):
            self.engine.submit(PROMPT, bad_words=["once"])
