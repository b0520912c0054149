"""Failures surface as exceptions carrying the status and the library's message."""
from __future__ import annotations

import os
import tempfile
import unittest

from tests.support import PROMPT, StackTest, pagoda


class ErrorTest(unittest.TestCase):

    def test_missing_model_file(self) -> None:
        path = os.path.join(tempfile.gettempdir(), "pagoda-no-such-model.gguf")
        with self.assertRaises(pagoda.NotFoundError) as cm:
            pagoda.Model(path)
        e = cm.exception
        self.assertIsInstance(e, pagoda.PagodaError)
        self.assertEqual(e.status, pagoda.Status.NOT_FOUND)
        self.assertIn(path, e.message)  # the library's sentence names the file
        self.assertIn("PAGODA_ERR_NOT_FOUND", str(e))
        self.assertIn(e.message, str(e))

    def test_malformed_model_file(self) -> None:
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(b"this is not a gguf file at all, just text" * 4)
            f.flush()
            with self.assertRaises(pagoda.PagodaError) as cm:
                pagoda.Model(f.name)
        self.assertEqual(cm.exception.status, pagoda.Status.FORMAT)
        self.assertIsInstance(cm.exception, pagoda.FormatError)
        self.assertTrue(cm.exception.message)

    def test_message_is_read_on_the_failing_thread(self) -> None:
        with self.assertRaises(pagoda.NotFoundError) as cm:
            pagoda.Model("/nonexistent/a.gguf")
        self.assertEqual(pagoda.last_error_message(), cm.exception.message)

    def test_every_status_has_its_class(self) -> None:
        from pagoda.errors import error
        for status in pagoda.Status:
            if status == pagoda.Status.OK:
                continue
            e = error(status, "m")
            self.assertEqual(e.status, status)
            self.assertNotEqual(type(e), pagoda.PagodaError, status)
            self.assertTrue(type(e).__doc__.startswith(f"``PAGODA_ERR_{status.name}``"))
        e = error(999, "from a newer library")
        self.assertEqual((type(e), e.status), (pagoda.PagodaError, 999))
        self.assertIn("from a newer library", str(e))

    def test_invalid_argument_is_a_value_error(self) -> None:
        with self.assertRaises(ValueError) as cm:
            pagoda.Mesh(devices="cpu:0", axes="tp=3")  # 3 ways over one device
        self.assertEqual(cm.exception.status, pagoda.Status.INVALID_ARGUMENT)
        self.assertTrue(cm.exception.message)

    def test_unknown_backend(self) -> None:
        with self.assertRaises(pagoda.NotFoundError) as cm:
            pagoda.Mesh(devices="nosuchbackend:0")
        self.assertIn("nosuchbackend", cm.exception.message)


class RequestErrorTest(StackTest):

    def test_bad_request_option(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError) as cm:
            self.engine.submit(PROMPT, top_p=2.5)
        self.assertIn("top_p", cm.exception.message)

    def test_token_outside_the_vocabulary(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.engine.generate([1, 100000], max_tokens=2)

    def test_empty_prompt(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError):
            self.engine.generate([], max_tokens=2)

    def test_values_that_do_not_fit_are_refused_not_wrapped(self) -> None:
        with self.assertRaises(ValueError) as cm:
            self.engine.submit(PROMPT, max_tokens=2**32 + 4)  # would wrap to 4
        self.assertIn("max_tokens", str(cm.exception))
        with self.assertRaises(ValueError):
            self.engine.submit(PROMPT, seed=-1)

    def test_token_ids_that_do_not_fit_are_refused(self) -> None:
        with self.assertRaises(ValueError):
            self.engine.submit([1, 2**32 + 5])  # would wrap to 5
        with self.assertRaises(ValueError):
            self.engine.submit(PROMPT, stop_token_ids=[2**31])
        with self.stack.model.tokenizer() as tok, self.assertRaises(ValueError):
            tok.decode([2**32 + 5])

    def test_abort_unknown_request(self) -> None:
        with self.assertRaises(pagoda.NotFoundError):
            self.engine.abort(123456789)


if __name__ == "__main__":
    unittest.main()
