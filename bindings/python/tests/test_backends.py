"""Backends (discovery, devices, skipped plugins) and the log callback."""
from __future__ import annotations

import os
import tempfile
import threading
import unittest

from tests.support import MODEL, pagoda


class BackendTest(unittest.TestCase):

    def test_cpu_backend(self) -> None:
        pagoda.discover()
        cpu = pagoda.find("cpu")
        self.assertIn(cpu, pagoda.backends())
        self.assertEqual(cpu.name, "cpu")
        self.assertTrue(cpu.description)
        self.assertTrue(os.path.basename(cpu.path).startswith("libpagoda-backend-cpu"))
        self.assertGreaterEqual(cpu.device_count(), 1)
        dev = cpu.device_info(0)
        self.assertEqual(dev.kind, pagoda.DeviceKind.CPU)
        self.assertTrue(dev.flags & pagoda.DEVICE_HOST_ACCESSIBLE)
        self.assertGreater(dev.total_memory, 0)
        self.assertGreater(dev.compute_units, 0)
        self.assertEqual(len(cpu.devices()), cpu.device_count())
        with self.assertRaises(pagoda.PagodaError):
            cpu.device_info(cpu.device_count())

    def test_discovery_again_loads_nothing_new(self) -> None:
        pagoda.discover()
        self.assertEqual(pagoda.discover(), 0)

    def test_unknown_backend(self) -> None:
        with self.assertRaises(pagoda.NotFoundError) as cm:
            pagoda.find("nosuchbackend")
        self.assertIn("cpu", cm.exception.message)  # it lists what is loaded

    def test_loading_a_file_that_is_not_a_plugin(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "libpagoda-backend-bogus.so")
            with open(path, "wb") as f:
                f.write(b"not an ELF file")
            with self.assertRaises(pagoda.NotAPluginError) as cm:
                pagoda.load(path)
            self.assertIn("libpagoda-backend-bogus.so", cm.exception.message)
            with self.assertRaises(pagoda.NotFoundError):
                pagoda.load(os.path.join(d, "missing.so"))


class LogTest(unittest.TestCase):

    def setUp(self) -> None:
        self.level = pagoda.get_log_level()
        pagoda.set_log_level(pagoda.LogLevel.INFO)

    def tearDown(self) -> None:
        pagoda.set_log_callback(None)
        pagoda.set_log_level(self.level)

    def discover_a_broken_plugin(self) -> str:
        """Discovery logs a warning for a plugin it skips; returns the plugin's name."""
        d = tempfile.mkdtemp()
        path = os.path.join(d, "libpagoda-backend-broken.so")
        with open(path, "wb") as f:
            f.write(b"\x7fELF broken")
        try:
            pagoda.discover(d)
        finally:
            os.remove(path)
            os.rmdir(d)
        return path

    def test_lines_reach_the_callback(self) -> None:
        lines: list[tuple[pagoda.LogLevel, str]] = []
        pagoda.set_log_callback(lambda level, message: lines.append((level, message)))
        path = self.discover_a_broken_plugin()
        self.assertTrue(any(lvl == pagoda.LogLevel.WARN and "broken" in msg
                            for lvl, msg in lines), lines)
        skipped = [s for s in pagoda.skipped() if s.path.endswith("libpagoda-backend-broken.so")]
        self.assertTrue(skipped)
        self.assertTrue(skipped[-1].message)
        self.assertNotEqual(skipped[-1].status, pagoda.Status.OK)
        self.assertTrue(os.path.basename(path))

    def test_level_filters(self) -> None:
        lines: list[str] = []
        pagoda.set_log_callback(lambda level, message: lines.append(message))
        pagoda.set_log_level(pagoda.LogLevel.ERROR)
        self.assertEqual(pagoda.get_log_level(), pagoda.LogLevel.ERROR)
        self.discover_a_broken_plugin()
        self.assertEqual(lines, [])
        with self.assertRaises(pagoda.InvalidArgumentError):
            pagoda.set_log_level(7)

    def test_an_exception_in_the_callback_does_not_escape(self) -> None:
        calls = []

        def callback(level: pagoda.LogLevel, message: str) -> None:
            calls.append(message)
            raise RuntimeError("a broken log sink")
        pagoda.set_log_callback(callback)
        # Reported on standard error and ignored: the call that logged goes on normally.
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.discover_a_broken_plugin()
        self.assertTrue(calls)
        self.assertIn("a broken log sink", err.getvalue())
        with pagoda.Model(MODEL) as m:  # the library still works
            self.assertEqual(m.info().n_layers, 5)

    def test_callback_from_other_threads(self) -> None:
        threads: set[int] = set()
        pagoda.set_log_callback(lambda level, message: threads.add(threading.get_ident()))
        t = threading.Thread(target=self.discover_a_broken_plugin)
        t.start()
        t.join()
        self.assertEqual(threads, {t.ident})

    def test_changing_the_callback_from_inside_it_is_refused(self) -> None:
        errors: list[BaseException] = []

        def callback(level: pagoda.LogLevel, message: str) -> None:
            try:
                pagoda.set_log_callback(None)
            except RuntimeError as e:
                errors.append(e)
        pagoda.set_log_callback(callback)
        self.discover_a_broken_plugin()
        self.assertTrue(errors)

    def test_back_to_standard_error(self) -> None:
        lines: list[str] = []
        pagoda.set_log_callback(lambda level, message: lines.append(message))
        pagoda.set_log_callback(None)
        pagoda.set_log_level(pagoda.LogLevel.OFF)  # keep the test's output quiet
        self.discover_a_broken_plugin()
        self.assertEqual(lines, [])


if __name__ == "__main__":
    unittest.main()
