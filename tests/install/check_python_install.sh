#!/usr/bin/env bash
# The Python binding installed as a new user would, each way into a fresh venv, every one then
# generating the main job's story text (the pagoda command's, from the same install):
#   1. `pip install ./python` from a copy of bindings/python, against libpagoda installed by
#      `cmake --install` into a scratch prefix and found through pkg-config when pip builds it
#      (and nothing at run time: no PAGODA_LIBRARY, no PKG_CONFIG_PATH, no LD_LIBRARY_PATH);
#   2. `pip install pagoda-*.whl`, the wheel of the CMake target python_wheel, with libpagoda
#      and the CPU backend inside, and no Pagoda installed anywhere it could find.
# Offline: builds take setuptools and wheel from Debian's /usr/share/python-wheels.
# Usage: check_python_install.sh <build-dir> <work-dir> <source-dir> <python3> <wheel-dir>
set -euo pipefail
build=$1 work=$2 src=$3 python=$4 wheels=$5
unset PAGODA_LIBRARY PAGODA_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH PYTHONPATH
export PAGODA_LOG_LEVEL=error PYTHONDONTWRITEBYTECODE=1
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
model=$src/tests/fixtures/models/stories260K/stories260K.gguf
story() {  # the story as Python generates it, prompt included, then where the library came from
    "$1" - "$model" <<'PY'
import sys
import pagoda
from pagoda import _library
with pagoda.Model(sys.argv[1]) as model, pagoda.Mesh() as mesh, \
        pagoda.KvCache(model, mesh) as cache, pagoda.Engine(model, mesh, cache) as engine:
    done = engine.generate("Once upon a time", max_tokens=24, temperature=0)
print("Once upon a time" + done[0].text)
print(_library._locate(), file=sys.stderr)
PY
}

echo "== cmake --install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
libdir=$(dirname "$(dirname "$(find "$work/prefix" -name pagoda.pc)")")
want=$("$work/prefix/bin/pagoda" generate --model "$model" --prompt "Once upon a time" --temperature 0 --max-tokens 24)
echo "the pagoda command: $want"

echo "== pip install ./python (a copy of bindings/python) against the installed library"
cp -r "$src/bindings/python" "$work/python"
"$python" -m venv "$work/venv-source"
PKG_CONFIG_PATH=$libdir/pkgconfig "$work/venv-source/bin/pip" install --quiet --no-index \
    --find-links /usr/share/python-wheels "$work/python" > "$work/pip-source.log" 2>&1 ||
    { cat "$work/pip-source.log"; fail "pip install ./python"; }
cd "$work"  # not beside a `pagoda` folder: the installed package must be the one imported
got=$(story "$work/venv-source/bin/python" 2> "$work/source.err") || { cat "$work/source.err"; fail "generating"; }
[[ $got == "$want" ]] || fail "the source install generated '$got'"
grep -q "^$libdir/libpagoda.so" "$work/source.err" || fail "loaded $(cat "$work/source.err"), not $libdir's"
[[ -f $("$work/venv-source/bin/python" -c 'import pagoda, os; print(os.path.dirname(pagoda.__file__))')/py.typed ]] ||
    fail "no py.typed installed"
echo "PASS: pip install ./python: the story, with $(cat "$work/source.err")"

echo "== pip install the wheel, with no Pagoda installed"
rm -rf "$work/prefix"
wheel=$(ls "$wheels"/pagoda-*.whl)
case $wheel in *-none-any.whl) fail "the wheel $wheel carries machine code but is tagged for any platform";; esac
"$python" -m venv "$work/venv-wheel"
"$work/venv-wheel/bin/pip" install --quiet --no-index "$wheel" > "$work/pip-wheel.log" 2>&1 ||
    { cat "$work/pip-wheel.log"; fail "pip install $wheel"; }
got=$(story "$work/venv-wheel/bin/python" 2> "$work/wheel.err") || { cat "$work/wheel.err"; fail "generating"; }
[[ $got == "$want" ]] || fail "the wheel generated '$got'"
grep -q "^$work/venv-wheel/.*/pagoda/_lib/libpagoda.so" "$work/wheel.err" || fail "loaded $(cat "$work/wheel.err")"
echo "PASS: pip install $(basename "$wheel"): the story, with the library inside the package"
