"""A Python callable as a request's logits processor: it sees the prompt and the tokens so far,
its changes to the row decide the tokens, an exception cancels the request with its text in the
error, and the engine lets go of it once the request is over."""
from __future__ import annotations

import gc
import weakref

from tests.support import PROMPT, Stack, StackTest, pagoda

KEPT = 300


class Recorder:
    """A processor that keeps only KEPT and records what it was told on each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, list[int], int, int]] = []

    def __call__(self, request_id: int, sequence_index: int, token_ids: memoryview,
                 n_prompt_tokens: int, logits: memoryview) -> None:
        self.calls.append((request_id, sequence_index, token_ids.tolist(), n_prompt_tokens,
                           len(logits)))
        for i in range(len(logits)):
            if i != KEPT:
                logits[i] = float("-inf")


class LogitsProcessorTest(StackTest):

    def test_keeping_one_token_decides_every_token(self) -> None:
        recorder = Recorder()
        with self.engine.stream(PROMPT, max_tokens=8, ignore_eos=True, seed=5,
                                logits_processor=recorder) as s:
            # Sampled at temperature 1: without the processor the tokens would vary.
            self.assertEqual(s.completions()[0].token_ids, [KEPT] * 8)
        prompt = self.stack.model.tokenizer().encode(PROMPT)
        vocabulary = self.stack.model.info().vocab_size
        self.assertEqual(len(recorder.calls), 8, "one call per generated token")
        for i, (request_id, sequence, tokens, n_prompt, n_logits) in enumerate(recorder.calls):
            self.assertEqual((request_id, sequence), (s.request_id, 0))
            self.assertEqual(n_prompt, len(prompt))
            self.assertEqual(tokens, prompt + [KEPT] * i, f"call {i}")
            self.assertEqual(n_logits, vocabulary)
        self.assertEqual(self.engine._processors, {}, "kept after the request's last output")

    def run_failing(self, fail_at: int, exception: BaseException) -> tuple[list, int]:
        """Outputs of a request (read with poll) whose processor raises on call ``fail_at``."""
        calls = 0

        def processor(*_args: object) -> None:
            nonlocal calls
            calls += 1
            if calls == fail_at:
                raise exception
        request_id = self.engine.submit(PROMPT, max_tokens=16, temperature=0, ignore_eos=True,
                                        logits_processor=processor)
        outputs = []
        while not outputs or not outputs[-1].request_finished:
            o = self.engine.poll()
            if o is None:
                self.engine.step()
            else:
                self.assertEqual(o.request_id, request_id)
                outputs.append(o)
        self.assertEqual(self.engine._processors, {}, "kept after the request's last output")
        return outputs, sum(len(o.token_ids) for o in outputs)

    def test_an_exception_cancels_the_request(self) -> None:
        outputs, generated = self.run_failing(3, ValueError("no third token"))
        last = outputs[-1]
        self.assertEqual(last.finish_reason, pagoda.FinishReason.ERROR)
        self.assertEqual(last.status, pagoda.Status.CANCELLED)
        self.assertIn("returned 1: ValueError: no third token", last.error)
        self.assertEqual(generated, 2)

    def test_even_system_exit_stays_out_of_c(self) -> None:
        outputs, generated = self.run_failing(1, SystemExit(3))
        self.assertEqual(outputs[-1].status, pagoda.Status.CANCELLED)
        self.assertIn("SystemExit: 3", outputs[-1].error)
        self.assertEqual(generated, 0)

    def test_a_stream_raises_cancelled(self) -> None:
        def processor(*_args: object) -> None:
            raise RuntimeError("stop here")
        with self.assertRaisesRegex(pagoda.CancelledError, "RuntimeError: stop here"):
            self.engine.generate(PROMPT, max_tokens=4, logits_processor=processor)

    def test_a_view_kept_past_the_call_is_a_harmless_copy(self) -> None:
        kept = []

        def processor(_rid: int, _seq: int, tokens: memoryview, _n: int,
                      logits: memoryview) -> None:
            kept.append((tokens, logits))
            logits[KEPT] = 1000.0  # the row is copied back: this decides the token
        c = self.engine.generate(PROMPT, max_tokens=4, ignore_eos=True, temperature=0,
                                 logits_processor=processor)[0]
        self.assertEqual(c.token_ids, [KEPT] * 4)
        self.assertEqual(len(kept), 4)
        for i, (tokens, logits) in enumerate(kept):  # still readable: Python-owned copies
            self.assertEqual(tokens.tolist()[len(tokens) - i:], [KEPT] * i)
            self.assertEqual(logits[KEPT], 1000.0)
        with self.assertRaises(TypeError):
            kept[0][0][0] = 1  # the tokens are read-only

    def test_closing_the_engine_releases_a_running_requests_processor(self) -> None:
        processor = Recorder()
        ref = weakref.ref(processor)
        with Stack() as stack:  # an engine of its own (a cache serves one engine at a time)
            engine = stack.engine
            engine.submit(PROMPT, max_tokens=64, ignore_eos=True, logits_processor=processor)
            engine.step()
            with self.assertRaises(pagoda.InvalidArgumentError):  # refused: nothing kept
                engine.submit(PROMPT, logit_bias={3: 250.0}, logits_processor=Recorder())
            self.assertEqual(len(engine._processors), 1)
            del processor
            gc.collect()
            self.assertIsNotNone(ref(), "the running request keeps its processor")
        gc.collect()
        self.assertIsNone(ref(), "closing the engine dropped the processor")
