"""The engine from several threads, as engine.h allows: submit, abort and poll from any
thread, one step at a time (the binding serializes steps), streams read concurrently."""
from __future__ import annotations

import threading
import unittest

from tests.support import PROMPT, Stack, StackTest, pagoda

PROMPTS = [PROMPT, "The little dog", "One day, a girl", "Tom and Sue"]


def run_threads(targets: list) -> None:
    errors: list[BaseException] = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: B036 - handed to the main thread
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]


class ThreadTest(StackTest):

    def reference(self, prompt: str, n: int = 40) -> str:
        return self.engine.generate(prompt, max_tokens=n, temperature=0)[0].text

    def test_streams_on_two_threads(self) -> None:
        expected = {p: self.reference(p) for p in PROMPTS}
        got: dict[str, str] = {}

        def stream(prompt: str):
            def run():
                with self.engine.stream(prompt, max_tokens=40, temperature=0) as s:
                    got[prompt] = "".join(s)
            return run
        run_threads([stream(p) for p in PROMPTS])
        self.assertEqual(got, expected)
        self.assertFalse(self.engine.has_work())

    def test_submit_and_poll_on_one_thread_while_another_steps(self) -> None:
        expected = {p: self.reference(p, 20) for p in PROMPTS}
        done = threading.Event()
        texts: dict[int, str] = {}
        ids: dict[int, str] = {}

        def stepper():
            while not done.is_set():
                self.engine.step()

        def client():
            try:
                for p in PROMPTS:
                    ids[self.engine.submit(p, max_tokens=20, temperature=0)] = p
                finished = 0
                while finished < len(PROMPTS):
                    o = self.engine.poll()
                    if o is None:
                        continue
                    texts[o.request_id] = texts.get(o.request_id, "") + o.text
                    finished += o.request_finished
            finally:
                done.set()
        run_threads([stepper, client])
        self.assertEqual({ids[r]: t for r, t in texts.items()}, expected)

    def test_abort_from_another_thread(self) -> None:
        with self.engine.stream(PROMPT, max_tokens=500, ignore_eos=True) as s:
            next(s)
            t = threading.Thread(target=s.abort)
            t.start()
            t.join()
            list(s)
        self.assertEqual(s.finish_reason, pagoda.FinishReason.ABORTED)

    def test_stats_while_another_thread_streams(self) -> None:
        seen: list[int] = []
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                seen.append(self.engine.stats().generated_tokens)
                self.stack.cache.stats()
                self.engine.metrics()

        w = threading.Thread(target=watch)
        w.start()
        try:
            self.reference(PROMPT, 100)
        finally:
            stop.set()
            w.join()
        self.assertEqual(seen, sorted(seen))  # counters only grow


class CloseWhileInUseTest(unittest.TestCase):

    def test_close_while_another_thread_streams(self) -> None:
        # The destroy waits for the call in flight; the streaming thread then finds the engine
        # closed instead of a freed handle.
        s = Stack()
        started = threading.Event()
        outcome: list[BaseException] = []

        def consume():
            try:
                with s.engine.stream(PROMPT, max_tokens=100000, ignore_eos=True) as st:
                    for _ in st:
                        started.set()
            except pagoda.ClosedError as e:
                outcome.append(e)

        t = threading.Thread(target=consume)
        t.start()
        started.wait(60)
        s.close()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(outcome), 1)


if __name__ == "__main__":
    unittest.main()
