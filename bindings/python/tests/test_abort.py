"""Aborting a request mid-stream, by the stream, by id, or by leaving the stream early."""
from __future__ import annotations

import unittest

from tests.support import PROMPT, StackTest, pagoda


class AbortTest(StackTest):

    def test_abort_mid_stream(self) -> None:
        with self.engine.stream(PROMPT, max_tokens=200, temperature=0, ignore_eos=True) as s:
            pieces = [next(s) for _ in range(5)]
            s.abort()
            rest = list(s)  # what was queued before the abort, then the end
        self.assertTrue(all(pieces))
        self.assertTrue(s.finished)
        self.assertEqual(s.finish_reason, pagoda.FinishReason.ABORTED)
        self.assertLess(len(s.token_ids), 200)
        self.assertLessEqual(len(rest), 2)
        self.assertFalse(self.engine.has_work())
        self.assertEqual(self.stack.cache.stats().sequences, 0)  # its blocks went back

    def test_abort_by_id_from_the_engine(self) -> None:
        with self.engine.stream(PROMPT, max_tokens=200, ignore_eos=True) as s:
            next(s)
            self.engine.abort(s.request_id)
            list(s)
        self.assertEqual(s.finish_reason, pagoda.FinishReason.ABORTED)
        with self.assertRaises(pagoda.NotFoundError):  # finished requests are not live
            self.engine.abort(s.request_id)
        s.abort()  # the stream knows it ended: nothing to do

    def test_leaving_the_stream_early_aborts(self) -> None:
        before = self.engine.metrics().requests_finished_aborted
        with self.engine.stream(PROMPT, max_tokens=200, ignore_eos=True) as s:
            for i, _ in enumerate(s):
                if i == 3:
                    break
        self.assertFalse(self.engine.has_work())
        self.assertEqual(self.engine.metrics().requests_finished_aborted, before + 1)
        # Its last output went nowhere public: poll() sees nothing of it.
        self.engine.step()
        self.assertIsNone(self.engine.poll())

    def test_a_closed_stream_yields_nothing_more(self) -> None:
        s = self.engine.stream(PROMPT, max_tokens=200, ignore_eos=True)
        next(s)
        self.engine.step()
        self.assertIsNone(self.engine.poll())  # the new text went to the stream's queue
        s.close()
        self.assertEqual(list(s), [])
        self.assertFalse(s.finished)  # its last output was never read
        self.assertFalse(self.engine.has_work())

    def test_abort_one_of_two(self) -> None:
        keep = self.engine.stream(PROMPT, max_tokens=30, temperature=0)
        drop = self.engine.stream("The cat", max_tokens=200, ignore_eos=True)
        next(drop)
        drop.abort()
        text = "".join(keep)
        self.assertEqual(len(list(drop.outputs())) <= 2, True)
        self.assertEqual(drop.finish_reason, pagoda.FinishReason.ABORTED)
        self.assertEqual(text, self.engine.generate(PROMPT, max_tokens=30, temperature=0)[0].text)


if __name__ == "__main__":
    unittest.main()
