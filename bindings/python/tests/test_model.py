"""Models (info, progress, background loading) and tokenizers."""
from __future__ import annotations

import os
import threading
import unittest

from tests.support import MODEL, PROMPT, ModelTestCase, pagoda


class ModelTest(ModelTestCase):

    def test_info(self) -> None:
        info = self.model.info()
        self.assertEqual(info.architecture, "llama")
        self.assertEqual((info.vocab_size, info.hidden_size, info.n_layers), (512, 64, 5))
        self.assertEqual((info.bos_token_id, info.eos_token_id), (1, 2))
        self.assertEqual(os.path.realpath(self.model.path), os.path.realpath(MODEL))

    def test_progress_callback(self) -> None:
        seen: list[tuple[float, str]] = []
        with pagoda.Model(MODEL, progress=lambda f, stage: seen.append((f, stage))):
            pass
        self.assertTrue(seen)
        fractions = [f for f, _ in seen]
        self.assertEqual(fractions, sorted(fractions))
        self.assertTrue(all(isinstance(stage, str) and stage for _, stage in seen))

    def test_progress_returning_false_cancels(self) -> None:
        with self.assertRaises(pagoda.CancelledError):
            pagoda.Model(MODEL, progress=lambda f, stage: False)

    def test_progress_exception_cancels_and_propagates(self) -> None:
        class Boom(Exception):
            pass

        def progress(f: float, stage: str) -> None:
            raise Boom(stage)
        with self.assertRaises(Boom):
            pagoda.Model(MODEL, progress=progress)

    def test_background_load(self) -> None:
        calls: list[float] = []
        loader = pagoda.Model.load_async(MODEL, progress=lambda f, s: calls.append(f))
        fraction, _ = loader.progress()
        self.assertTrue(0.0 <= fraction <= 1.0)
        with loader.finish() as model:
            self.assertEqual(model.info().n_layers, 5)
        self.assertTrue(loader.closed)
        self.assertTrue(calls)
        with self.assertRaises(pagoda.ClosedError):
            loader.finish()

    def test_background_load_cancelled(self) -> None:
        gate = threading.Event()

        def progress(f: float, stage: str) -> None:
            gate.wait(10)  # hold the load until cancel has been asked
        loader = pagoda.Model.load_async(MODEL, progress=progress)
        loader.cancel()
        gate.set()
        with self.assertRaises(pagoda.CancelledError):
            loader.finish()

    def test_background_load_of_a_missing_file(self) -> None:
        loader = pagoda.Model.load_async("/nonexistent/model.gguf")
        with self.assertRaises(pagoda.NotFoundError) as cm:
            loader.finish()
        self.assertIn("/nonexistent/model.gguf", cm.exception.message)

    def test_unfinished_loader_closes(self) -> None:
        loader = pagoda.Model.load_async(MODEL)
        loader.close()  # cancels, waits and drops whatever was opened
        loader.close()
        with self.assertRaises(pagoda.ClosedError):
            loader.progress()


class TokenizerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        with pagoda.Model(MODEL) as model:
            cls.tok = model.tokenizer()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tok.close()

    def test_info(self) -> None:
        info = self.tok.info()
        self.assertEqual((info.vocab_size, info.bos_token_id, info.eos_token_id), (512, 1, 2))
        self.assertEqual(info.model, "spm")

    def test_encode_decode(self) -> None:
        ids = self.tok.encode(PROMPT)
        self.assertEqual(ids[0], 1)  # BOS
        self.assertEqual(self.tok.encode(PROMPT, add_special=False), ids[1:])
        self.assertEqual(self.tok.decode(ids, skip_special=True), PROMPT)
        with_special = self.tok.decode(ids)  # BOS spelled out, as in Hugging Face's decode
        self.assertTrue(with_special.startswith("<s>") and with_special.endswith(PROMPT))
        self.assertEqual(self.tok.encode(""), [1])
        self.assertEqual(self.tok.encode("", add_special=False), [])
        self.assertEqual(self.tok.decode([]), "")

    def test_parse_special(self) -> None:
        self.assertNotIn(2, self.tok.encode("a</s>", add_special=False))
        self.assertEqual(self.tok.encode("a</s>", add_special=False, parse_special=True)[-1], 2)

    def test_token_to_piece(self) -> None:
        ids = self.tok.encode(PROMPT, add_special=False)
        # SentencePiece's dummy prefix: the first piece starts with a space.
        self.assertEqual(b"".join(self.tok.token_to_piece(i) for i in ids),
                         b" " + PROMPT.encode())
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.tok.token_to_piece(100000)

    def test_token_to_piece_longer_than_the_first_buffer(self) -> None:
        (time_id,) = self.tok.encode(" time", add_special=False)[-1:]
        piece = self.tok.token_to_piece(time_id)
        self.assertGreater(len(piece), 1)
        self.tok._piece_capacity = 1
        try:
            self.assertEqual(self.tok.token_to_piece(time_id), piece)
        finally:
            del self.tok._piece_capacity

    def test_decode_rejects_unknown_ids(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.tok.decode([5, 100000])

    def test_chat_template(self) -> None:
        messages = [{"role": "user", "content": "Hi"}]
        with self.assertRaises(pagoda.UnsupportedError):  # stories260K carries no template
            self.tok.apply_chat_template(messages)
        template = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                    "{% if add_generation_prompt %}<assistant>{% endif %}{{ greeting }}")
        self.assertEqual(self.tok.apply_chat_template(messages, add_generation_prompt=True,
                                                      chat_template=template,
                                                      context={"greeting": "!"}),
                         "<user>Hi<assistant>!")
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.tok.apply_chat_template('{"not": "a list"}', chat_template=template)

    def test_open_a_missing_tokenizer(self) -> None:
        with self.assertRaises(pagoda.NotFoundError):
            pagoda.Tokenizer("/nonexistent/tokenizer.json")


if __name__ == "__main__":
    unittest.main()
