"""The binding's structs against the C headers: every size, alignment and field offset that
``pagoda-abi-layout`` prints (built from the same headers by the C compiler) must match, and
every public struct it prints must be declared here or listed below as deliberately left out.
"""
from __future__ import annotations

import ctypes
import subprocess
import unittest

from tests.support import ABI_LAYOUT  # first: it puts the package on the path
from pagoda import _structs

# Host structs the binding does not declare, and why. A struct appended to the headers fails the
# test until it is declared or listed here.
NOT_COVERED = {
    "pagoda_server_options_t",  # server.h: the HTTP server is not part of this binding
}


def parse(text: str) -> tuple[dict, dict]:
    """``struct NAME SIZE ALIGN`` and ``field STRUCT.FIELD OFFSET SIZE`` lines."""
    structs: dict[str, tuple[int, int]] = {}
    fields: dict[str, dict[str, tuple[int, int]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "struct" and len(parts) == 4:
            structs[parts[1]] = (int(parts[2]), int(parts[3]))
        elif parts[0] == "field" and len(parts) == 4:
            struct, _, field = parts[1].partition(".")
            fields.setdefault(struct, {})[field] = (int(parts[2]), int(parts[3]))
        else:
            raise ValueError(f"unexpected line from pagoda-abi-layout: {line!r}")
    return structs, fields


def declared(cls: type) -> dict[str, tuple[int, int]]:
    return {name: (getattr(cls, name).offset, getattr(cls, name).size)
            for name, *_ in cls._fields_}


@unittest.skipUnless(ABI_LAYOUT, "PAGODA_ABI_LAYOUT (the pagoda-abi-layout program) not given")
class LayoutTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        out = subprocess.run([ABI_LAYOUT], check=True, capture_output=True, text=True).stdout
        cls.structs, cls.fields = parse(out)

    def test_declared_structs_match_the_headers(self) -> None:
        self.assertTrue(self.structs, "pagoda-abi-layout printed no struct")
        for cls in _structs.ALL:
            with self.subTest(struct=cls.c_name):
                self.assertIn(cls.c_name, self.structs)
                self.assertEqual((ctypes.sizeof(cls), ctypes.alignment(cls)),
                                 self.structs[cls.c_name], "sizeof, alignof")
                self.assertEqual(declared(cls), self.fields.get(cls.c_name, {}))

    def test_every_public_struct_is_declared_or_left_out_on_purpose(self) -> None:
        ours = {cls.c_name for cls in _structs.ALL}
        missing = [name for name in self.structs
                   if name not in ours and name not in NOT_COVERED]
        self.assertEqual(missing, [], "structs of the headers this binding does not declare")
        stale = sorted(NOT_COVERED - set(self.structs))
        self.assertEqual(stale, [], "listed as left out, but pagoda-abi-layout has no such struct")


class ParseTest(unittest.TestCase):

    def test_format(self) -> None:
        structs, fields = parse("struct pagoda_logprob_t 8 4\n"
                                "field pagoda_logprob_t.token_id 0 4\n"
                                "field pagoda_logprob_t.logprob 4 4\n")
        self.assertEqual(structs, {"pagoda_logprob_t": (8, 4)})
        self.assertEqual(fields["pagoda_logprob_t"], declared(_structs.Logprob))
        with self.assertRaises(ValueError):
            parse("structure x 1 1")


if __name__ == "__main__":
    unittest.main()
