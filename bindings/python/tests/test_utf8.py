"""Text pieces never split a UTF-8 character, whatever bytes each output brings."""
from __future__ import annotations

import ctypes
import unittest

from tests.support import pagoda
from pagoda import _structs
from pagoda.output import Utf8Joiner, read_output

TEXT = "Once upon a time — a café, 東京, and 🐉!"


class Utf8JoinerTest(unittest.TestCase):

    def test_every_split_gives_whole_characters(self) -> None:
        data = TEXT.encode("utf-8")
        for cut in range(len(data) + 1):
            j = Utf8Joiner()
            first = j.join((1, 0), data[:cut], False)
            second = j.join((1, 0), data[cut:], True)
            self.assertEqual(first + second, TEXT, cut)
            self.assertEqual(first, data[:cut].decode("utf-8", "ignore"), cut)

    def test_byte_at_a_time(self) -> None:
        j = Utf8Joiner()
        data = TEXT.encode("utf-8")
        pieces = [j.join((7, 0), data[i:i + 1], i == len(data) - 1) for i in range(len(data))]
        self.assertEqual("".join(pieces), TEXT)
        for p in pieces:  # each piece is whole characters (or nothing)
            p.encode("utf-8")

    def test_sequences_are_kept_apart(self) -> None:
        j = Utf8Joiner()
        dragon = "🐉".encode("utf-8")
        self.assertEqual(j.join((1, 0), dragon[:2], False), "")
        self.assertEqual(j.join((1, 1), b"ab", False), "ab")
        self.assertEqual(j.join((2, 0), dragon[:1], False), "")
        self.assertEqual(j.join((1, 0), dragon[2:], False), "🐉")
        self.assertEqual(j.join((2, 0), dragon[1:], False), "🐉")

    def test_a_final_incomplete_character_is_replaced(self) -> None:
        j = Utf8Joiner()
        self.assertEqual(j.join((1, 0), b"a\xe6\x9d", True), "a\ufffd")
        self.assertEqual(j.join((1, 0), b"b", True), "b")  # nothing left over

    def test_invalid_bytes_inside_are_replaced(self) -> None:
        self.assertEqual(Utf8Joiner().join((1, 0), b"a\xffb", False), "a\ufffdb")



class ReadOutputTest(unittest.TestCase):
    """read_output on outputs made here, for cases the bundled model does not produce."""

    def output(self, text: bytes, finish: int = 0) -> tuple:
        o = _structs.new(_structs.Output)
        buf = ctypes.create_string_buffer(text)
        ids = (ctypes.c_int32 * 2)(7, 9)
        o.request_id, o.sequence_index, o.finish_reason = 11, 1, finish
        o.token_ids, o.n_tokens = ids, 2
        o.text, o.text_len = ctypes.cast(buf, ctypes.c_char_p), len(text)
        return o, memoryview(o).cast("B"), (buf, ids)

    def test_fields(self) -> None:
        o, view, _keep = self.output("é".encode(), finish=2)
        o.request_finished, o.n_generated, o.cumulative_logprob = 1, 5, -1.5
        r = read_output(o, view, Utf8Joiner())
        self.assertEqual((r.request_id, r.sequence_index, r.token_ids, r.text),
                         (11, 1, [7, 9], "é"))
        self.assertEqual(r.finish_reason, pagoda.FinishReason.STOP_TOKEN)
        self.assertTrue(r.finished and r.request_finished)
        self.assertEqual((r.n_generated, r.cumulative_logprob), (5, -1.5))
        self.assertIsNone(r.logprobs)

    def test_text_holding_a_nul(self) -> None:
        o, view, _keep = self.output(b"a\0b")
        self.assertEqual(read_output(o, view, Utf8Joiner()).text, "a\0b")

    def test_split_character_across_outputs(self) -> None:
        j = Utf8Joiner()
        data = "東".encode()
        o, view, _keep = self.output(data[:1])
        self.assertEqual(read_output(o, view, j).text, "")
        o, view, _keep = self.output(data[1:], finish=1)
        self.assertEqual(read_output(o, view, j).text, "東")


if __name__ == "__main__":
    unittest.main()
