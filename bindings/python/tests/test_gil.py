"""The GIL is released while the library works: other Python threads run during a call."""
from __future__ import annotations

import ctypes
import threading
import unittest

from tests.support import MODEL, pagoda
from pagoda._api import lib
from pagoda.errors import check


class GilTest(unittest.TestCase):

    def test_other_threads_run_during_a_blocking_call(self) -> None:
        # The open cannot end before another Python thread has set `release`. The main thread
        # waits for it inside pagoda_model_loader_finish, a C call that blocks: were the GIL
        # held there, neither the timer thread nor the progress callback could ever run.
        release = threading.Event()
        loader = pagoda.Model.load_async(MODEL, progress=lambda f, stage: release.wait(60))
        timer = threading.Timer(0.05, release.set)
        timer.start()
        out = ctypes.c_void_p()
        status = lib.pagoda_model_loader_finish(loader._detach(), ctypes.byref(out))
        timer.join()
        try:
            check(status)
            self.assertTrue(release.is_set())
        finally:
            lib.pagoda_model_destroy(out)


if __name__ == "__main__":
    unittest.main()
