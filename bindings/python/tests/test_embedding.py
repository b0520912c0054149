"""Embedding requests through the binding: a text's vector has the model's hidden size and unit
L2 norm by default, mean and last pooling differ, normalize=False keeps the pooled length in the
same direction, and what an embedding request cannot take is refused naming the field."""
from __future__ import annotations

import math
from array import array

from tests.support import PROMPT, StackTest, pagoda


def norm(v: array) -> float:
    return math.sqrt(sum(x * x for x in v))


class EmbeddingTest(StackTest):

    def test_a_text_gives_a_unit_vector_of_the_hidden_size(self) -> None:
        v = self.engine.embed(PROMPT)
        self.assertIsInstance(v, array)
        self.assertEqual(v.typecode, "f")
        self.assertEqual(len(v), self.stack.model.info().hidden_size)
        self.assertAlmostEqual(norm(v), 1.0, places=4)
        # A plain decoder names no pooling: the model's is the last token's. The same prompt
        # gives the same vector,
        # as token ids too.
        self.assertEqual(self.engine.embed(PROMPT, pooling="last"), v)
        with self.stack.model.tokenizer() as tokenizer:
            ids = tokenizer.encode(PROMPT)
        self.assertEqual(list(self.engine.embed(ids)), list(v))

    def test_mean_and_last_pooling_differ(self) -> None:
        last = self.engine.embed(PROMPT, pooling=pagoda.Pooling.LAST)
        mean = self.engine.embed(PROMPT, pooling="mean")
        self.assertEqual(len(mean), len(last))
        self.assertAlmostEqual(norm(mean), 1.0, places=4)
        self.assertGreater(max(abs(a - b) for a, b in zip(mean, last)), 1e-3)

    def test_unnormalized_has_the_same_direction(self) -> None:
        for pooling in ("last", "mean"):
            unit = self.engine.embed(PROMPT, pooling=pooling)
            raw = self.engine.embed(PROMPT, pooling=pooling, normalize=False)
            length = norm(raw)
            self.assertGreater(abs(length - 1.0), 1e-3, f"{pooling}: |raw| = {length}")
            for a, b in zip(raw, unit):
                self.assertAlmostEqual(a / length, b, places=4)
            self.assertEqual(self.engine.embed(PROMPT, pooling=pooling, normalize=True), unit)

    def test_the_output_carries_the_vector(self) -> None:
        with self.engine.stream(PROMPT, embed=True, pooling="mean") as s:
            outputs = list(s.outputs())
        self.assertEqual(len(outputs), 1)
        o = outputs[0]
        self.assertTrue(o.request_finished)
        self.assertEqual(o.finish_reason, pagoda.FinishReason.STOP_TOKEN)
        self.assertEqual(o.token_ids, [])
        self.assertEqual(o.text, "")
        self.assertEqual(list(o.embedding), list(self.engine.embed(PROMPT, pooling="mean")))
        # A generating request's outputs carry none.
        for o in self.engine.stream(PROMPT, max_tokens=3, temperature=0).outputs():
            self.assertIsNone(o.embedding)

    def test_what_an_embedding_cannot_take_is_refused_by_name(self) -> None:
        for refused, field in ((dict(n=2), "n"), (dict(regex="[a-z]+"), "constraint_kind"),
                               (dict(stop_strings=["."]), "stop_strings")):
            with self.subTest(field=field):
                with self.assertRaises(pagoda.InvalidArgumentError) as caught:
                    self.engine.submit(PROMPT, embed=True, **refused)
                # The field as a word: "n" alone, not a letter of another.
                self.assertRegex(caught.exception.message, rf"\b{field}\b")
        # pooling and normalize belong to embedding requests.
        with self.assertRaises(pagoda.InvalidArgumentError) as caught:
            self.engine.submit(PROMPT, pooling="mean")
        self.assertIn("pooling", caught.exception.message)
        with self.assertRaises(pagoda.InvalidArgumentError) as caught:
            self.engine.submit(PROMPT, normalize=False)
        self.assertIn("embedding_normalize", caught.exception.message)
        with self.assertRaisesRegex(ValueError, "'last', 'mean'"):
            self.engine.embed(PROMPT, pooling="max")
        self.assertFalse(self.engine.has_work())
