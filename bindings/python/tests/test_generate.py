"""Generation through the engine: the reference greedy text, prompts as text or ids, sampling,
n, beam search, logprobs, stop rules."""
from __future__ import annotations

import asyncio
import math
import subprocess
import unittest

from tests.support import CLI, MODEL, PROMPT, StackTest, pagoda


class GenerateTest(StackTest):

    @unittest.skipUnless(CLI, "PAGODA_CLI (the `pagoda` command) not given")
    def test_greedy_text_is_the_cli_text(self) -> None:
        # `pagoda generate` prints the prompt, the text as it comes and a newline.
        ref = subprocess.run([CLI, "generate", "--model", MODEL, "--prompt", PROMPT,
                              "--max-tokens", "96", "--temperature", "0"],
                             check=True, capture_output=True).stdout.decode()
        with self.engine.stream(PROMPT, max_tokens=96, temperature=0) as s:
            pieces = list(s)
        self.assertGreater(len(pieces), 10)  # streamed, not one block
        self.assertEqual(ref, PROMPT + "".join(pieces) + "\n")
        self.assertEqual(len(s.token_ids), 96)
        self.assertEqual(s.finish_reason, pagoda.FinishReason.LENGTH)

    def test_async_streams_take_turns_on_one_loop(self) -> None:
        # Two requests read with `async for` in two tasks of one event loop: each gets the text
        # the blocking stream gets, and the loop runs another task meanwhile.
        with self.engine.stream(PROMPT, max_tokens=48, temperature=0) as s:
            want = "".join(s)
        ticks = 0

        async def read(prompt: str) -> str:
            with self.engine.stream(prompt, max_tokens=48, temperature=0) as stream:
                return "".join([piece async for piece in stream])

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        async def main() -> list[str]:
            ticker = asyncio.create_task(tick())
            texts = await asyncio.gather(read(PROMPT), read(PROMPT))
            ticker.cancel()
            return texts

        self.assertEqual(asyncio.run(main()), [want, want])
        self.assertGreater(ticks, 10)
        with self.engine.stream(PROMPT, max_tokens=4, n=2) as two:
            with self.assertRaises(ValueError):
                two.__aiter__()

    def test_follow_needs_a_mesh_over_processes(self) -> None:
        # One process: there is no rank 0 to follow.
        with self.assertRaises(pagoda.InvalidArgumentError) as caught:
            self.engine.follow()
        self.assertIn("one process", str(caught.exception))

    def test_token_ids_prompt_gives_the_text_prompt_result(self) -> None:
        ids = self.stack.model.tokenizer().encode(PROMPT)
        by_text = self.engine.generate(PROMPT, max_tokens=24, temperature=0)[0]
        by_ids = self.engine.generate(ids, max_tokens=24, temperature=0)[0]
        self.assertEqual(by_text.token_ids, by_ids.token_ids)
        self.assertEqual(by_text.text, by_ids.text)
        self.assertEqual(by_ids.n_prompt_tokens, len(ids))

    def test_text_is_the_decoded_tokens(self) -> None:
        c = self.engine.generate(PROMPT, max_tokens=40, temperature=0)[0]
        tok = self.stack.model.tokenizer()
        self.assertEqual(c.text, tok.decode(c.token_ids, skip_special=True))

    def test_seeded_sampling_repeats_and_seeds_differ(self) -> None:
        def run(seed: int) -> list[int]:
            return self.engine.generate(PROMPT, max_tokens=32, temperature=1.0, top_k=40,
                                        seed=seed)[0].token_ids
        self.assertEqual(run(7), run(7))
        self.assertNotEqual(run(7), run(8))

    def test_n_sequences(self) -> None:
        cs = self.engine.generate(PROMPT, max_tokens=16, temperature=1.0, seed=3, n=3)
        self.assertEqual([c.sequence_index for c in cs], [0, 1, 2])
        self.assertTrue(all(len(c.token_ids) == 16 for c in cs))
        self.assertGreater(len({tuple(c.token_ids) for c in cs}), 1)

    def test_best_of(self) -> None:
        cs = self.engine.generate(PROMPT, max_tokens=8, temperature=1.0, seed=5, best_of=4, n=2)
        self.assertEqual([c.sequence_index for c in cs], [0, 1])
        self.assertTrue(all(len(c.token_ids) == 8 for c in cs))
        # Ranked by cumulative log-probability, best first.
        self.assertGreaterEqual(cs[0].cumulative_logprob, cs[1].cumulative_logprob)

    def test_bytes_prompt_is_refused(self) -> None:
        with self.assertRaises(TypeError):
            self.engine.submit(PROMPT.encode())

    def test_text_stream_refuses_several_sequences(self) -> None:
        with self.engine.stream(PROMPT, max_tokens=4, n=2, temperature=1.0) as s:
            with self.assertRaises(ValueError):
                iter(s)
            self.assertEqual(len(s.completions()), 2)

    def test_beam_search(self) -> None:
        cs = self.engine.generate(PROMPT, max_tokens=12, beam_width=3, n=2)
        self.assertEqual(len(cs), 2)
        # Beams come ranked: the first scores at least as well as the second.
        score = [c.cumulative_logprob / max(len(c.token_ids), 1) for c in cs]
        self.assertGreaterEqual(score[0], score[1] - 1e-6)

    def test_logprobs(self) -> None:
        c = self.engine.generate(PROMPT, max_tokens=8, temperature=0, logprobs=3,
                                 prompt_logprobs=2)[0]
        self.assertEqual(len(c.logprobs), 8)
        self.assertEqual(len(c.top_logprobs), 8)
        for tok, lp, top in zip(c.token_ids, c.logprobs, c.top_logprobs):
            self.assertEqual(len(top), 3)
            self.assertEqual(top[0].token_id, tok)  # greedy: the chosen one is the likeliest
            self.assertAlmostEqual(top[0].logprob, lp, places=5)
            self.assertLessEqual(lp, 0.0)
        self.assertAlmostEqual(c.cumulative_logprob, sum(c.logprobs), places=3)
        self.assertEqual(len(c.prompt_logprobs), c.n_prompt_tokens)
        self.assertIsNone(c.prompt_logprobs[0])
        self.assertTrue(all(x is not None and not math.isnan(x) for x in c.prompt_logprobs[1:]))
        self.assertEqual(c.prompt_top_logprobs[0], [])
        self.assertEqual(len(c.prompt_top_logprobs[1]), 2)

    def test_no_logprobs_unless_asked(self) -> None:
        c = self.engine.generate(PROMPT, max_tokens=4, temperature=0)[0]
        self.assertIsNone(c.logprobs)
        self.assertIsNone(c.top_logprobs)
        self.assertIsNone(c.prompt_logprobs)

    def test_stop_string(self) -> None:
        full = self.engine.generate(PROMPT, max_tokens=64, temperature=0)[0].text
        stop = "girl"
        self.assertIn(stop, full)
        c = self.engine.generate(PROMPT, max_tokens=64, temperature=0, stop_strings=[stop])[0]
        self.assertEqual(c.finish_reason, pagoda.FinishReason.STOP_STRING)
        self.assertEqual(c.text, full[:full.index(stop)])
        c = self.engine.generate(PROMPT, max_tokens=64, temperature=0, stop_strings=[stop],
                                 include_stop_string=True)[0]
        self.assertEqual(c.text, full[:full.index(stop) + len(stop)])

    def test_stop_token(self) -> None:
        greedy = self.engine.generate(PROMPT, max_tokens=16, temperature=0)[0].token_ids
        c = self.engine.generate(PROMPT, max_tokens=16, temperature=0,
                                 stop_token_ids=[greedy[5]])[0]
        self.assertEqual(c.finish_reason, pagoda.FinishReason.STOP_TOKEN)
        self.assertEqual(c.token_ids, greedy[:6])

    def test_request_options_object(self) -> None:
        opts = pagoda.RequestOptions(max_tokens=5, temperature=0)
        self.assertEqual(len(self.engine.generate(PROMPT, opts)[0].token_ids), 5)
        with self.assertRaises(TypeError):
            self.engine.generate(PROMPT, opts, max_tokens=3)  # both: which one would win?
        with self.assertRaises(TypeError):
            self.engine.generate(PROMPT, max_tokenz=3)  # a misspelt option is not ignored
        with self.assertRaises(TypeError):
            self.engine.generate(PROMPT, stop_strings="girl")  # one string is not a list

    def test_poll_api(self) -> None:
        rid = self.engine.submit(PROMPT, max_tokens=10, temperature=0)
        outputs = []
        while self.engine.has_work():
            self.engine.step()
            while (o := self.engine.poll()) is not None:
                outputs.append(o)
        self.assertIsNone(self.engine.poll())
        self.assertTrue(all(o.request_id == rid for o in outputs))
        self.assertTrue(outputs[-1].request_finished)
        self.assertEqual(outputs[-1].finish_reason, pagoda.FinishReason.LENGTH)
        self.assertEqual(sum(len(o.token_ids) for o in outputs), 10)
        self.assertEqual(outputs[-1].n_generated, 10)
        ref = self.engine.generate(PROMPT, max_tokens=10, temperature=0)[0].text
        self.assertEqual("".join(o.text for o in outputs), ref)


if __name__ == "__main__":
    unittest.main()
