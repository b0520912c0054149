"""Text pieces never split a UTF-8 character, whatever bytes each output brings."""
from __future__ import annotations

import unittest

from tests.support import pagoda  # noqa: F401 - loads the package as the other tests do
from pagoda.output import Utf8Joiner

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


if __name__ == "__main__":
    unittest.main()
