"""Constrained decoding through the binding: a regex whose outputs match in full (``re``), a
JSON Schema given as a dict whose outputs parse with the required keys in its order, a grammar
refused with the library's reason, and two constraints at once refused before the library."""
from __future__ import annotations

import json
import re

from tests.support import PROMPT, StackTest, pagoda

SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 8},
                         "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"]}


class ConstraintTest(StackTest):

    def generate(self, seed: int, **constraint: object) -> pagoda.Completion:
        return self.engine.generate(PROMPT, max_tokens=256, temperature=1.0, seed=seed,
                                    **constraint)[0]

    def test_regex_matches_in_full(self) -> None:
        pattern = r"[0-9]{3}-[a-z]{2,4}"
        for seed in range(4):
            c = self.generate(seed, regex=pattern)
            self.assertIsNotNone(re.fullmatch(pattern, c.text), f"seed {seed}: {c.text!r}")
            self.assertEqual(c.finish_reason, pagoda.FinishReason.STOP_TOKEN)

    def test_json_schema_gives_the_required_keys_in_order(self) -> None:
        for seed in range(3):
            for schema in (SCHEMA, json.dumps(SCHEMA)):
                c = self.generate(seed, json_schema=schema)
                self.assertEqual(c.finish_reason, pagoda.FinishReason.STOP_TOKEN, c.text)
                value = json.loads(c.text)
                self.assertEqual(list(value), ["name", "age"], c.text)
                self.assertIsInstance(value["name"], str)
                self.assertLessEqual(len(value["name"]), 8)
                self.assertIsInstance(value["age"], int)
                self.assertTrue(0 <= value["age"] <= 120, c.text)
        # A dict is dumped in its own key order: the properties come out in that order.
        reordered = dict(SCHEMA, properties=dict(reversed(list(SCHEMA["properties"].items()))))
        self.assertEqual(list(json.loads(self.generate(0, json_schema=reordered).text)),
                         ["age", "name"])
        # Any object: stories260K writes a story into its first key, so only the start is sure.
        c = self.engine.generate(PROMPT, max_tokens=8, json_object=True)[0]
        self.assertTrue(c.text.startswith("{"), c.text)

    def test_a_bad_grammar_is_refused_with_the_reason(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError) as caught:
            self.engine.submit(PROMPT, grammar='root ::= "a" missing')
        self.assertIn("'missing' is not defined", caught.exception.message)
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.engine.submit(PROMPT, regex="[a-z]+", beam_width=2)
        self.assertFalse(self.engine.has_work())

    def test_one_constraint_at_a_time(self) -> None:
        with self.assertRaisesRegex(ValueError, "one constraint, got regex= and json_object="):
            self.engine.submit(PROMPT, regex="[0-9]+", json_object=True)
        with self.assertRaisesRegex(ValueError, "NUL byte"):
            self.engine.submit(PROMPT, grammar='root ::= "a"\0')
        with self.assertRaises(TypeError):
            self.engine.submit(PROMPT, json_schema=["not", "a", "schema"])
        self.assertEqual(pagoda.RequestOptions().constraint(),
                         (pagoda.options.ConstraintKind.NONE, None))
        self.assertFalse(self.engine.has_work())
