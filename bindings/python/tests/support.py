"""What the tests share: where the model and the reference programs are, and a full stack.

CTest passes the paths through the environment (bindings/python/CMakeLists.txt); run by hand,
the model defaults to the repository's bundled stories260K.
"""
from __future__ import annotations

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BINDING = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(BINDING))
sys.path.insert(0, BINDING)

import pagoda  # noqa: E402

MODEL = os.environ.get("PAGODA_TEST_MODEL") or os.path.join(
    REPO, "tests", "fixtures", "models", "stories260K", "stories260K.gguf")
CLI = os.environ.get("PAGODA_CLI")                  # the `pagoda` command, for reference text
ABI_LAYOUT = os.environ.get("PAGODA_ABI_LAYOUT")    # pagoda-abi-layout, for the struct layouts
PROMPT = "Once upon a time"


class Stack:
    """Model, mesh, KV cache and engine on stories260K, closed in reverse order."""

    def __init__(self, **engine_options: object):
        self.model = pagoda.Model(MODEL)
        self.mesh = pagoda.Mesh()
        self.cache = pagoda.KvCache(self.model, self.mesh)
        self.engine = pagoda.Engine(self.model, self.mesh, self.cache, **engine_options)

    def close(self) -> None:
        for h in (self.engine, self.cache, self.mesh, self.model):
            h.close()

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ModelTestCase(unittest.TestCase):
    """A test case with one open stories260K for all its tests."""

    model: pagoda.Model

    @classmethod
    def setUpClass(cls) -> None:
        cls.model = pagoda.Model(MODEL)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.model.close()


class StackTest(unittest.TestCase):
    """A test case with one stack for all its tests."""

    stack: Stack

    @classmethod
    def setUpClass(cls) -> None:
        cls.stack = Stack()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.stack.close()

    @property
    def engine(self) -> pagoda.Engine:
        return self.stack.engine
