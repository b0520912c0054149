#!/usr/bin/env bash
# The Rust binding used as a new user would, against libpagoda installed by `cmake --install`
# into a scratch prefix and found only through pkg-config (PKG_CONFIG_PATH), offline:
#   1. `cargo test` in the checkout's bindings/rust, with none of the variables CTest sets:
#      the tests find the `pagoda` command and the layout printer through pkg-config (strictly:
#      not finding them fails);
#   2. a host made by `cargo new`, depending on the `pagoda` crate by path and version, builds
#      and generates the main job's story text (the same as the installed `pagoda` command's).
# Usage: check_rust_install.sh <build-dir> <work-dir> <source-dir> <cargo>
set -euo pipefail
build=$1 work=$2 src=$3 cargo=$4
unset PAGODA_LIB_DIR PAGODA_CLI PAGODA_ABI_LAYOUT PAGODA_INCLUDE_DIR PAGODA_MODEL PAGODA_TEST_STRICT \
      PAGODA_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH RUSTFLAGS CARGO_TARGET_DIR
export PAGODA_LOG_LEVEL=error CARGO_NET_OFFLINE=true
# cargo and rustc from one toolchain (the one CMake picked).
PATH=$(dirname "$cargo"):$PATH
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
model=$src/tests/fixtures/models/stories260K/stories260K.gguf

echo "== cmake --install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
pc=$(find "$work/prefix" -name pagoda.pc)
libdir=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH=$(dirname "$pc")
want=$("$work/prefix/bin/pagoda" generate --model "$model" --prompt "Once upon a time" --temperature 0 --max-tokens 24)
echo "the pagoda command: $want"

echo "== cargo test in bindings/rust, the library from pkg-config"
# Strict: a test that cannot find the pagoda command or the layout printer through pkg-config
# fails instead of skipping its check (libtest hides what a passing test prints).
PAGODA_TEST_STRICT=1 "$cargo" test --offline --locked --manifest-path "$src/bindings/rust/Cargo.toml" \
    --target-dir "$work/target" --workspace > "$work/cargo-test.log" 2>&1 ||
    { tail -n 60 "$work/cargo-test.log"; fail "cargo test"; }
grep -E "^test result:" "$work/cargo-test.log" | awk '{p += $4; f += $6} END {print "PASS: cargo test: " p " passed, " f " failed"}'

echo "== a host made by cargo new"
cd "$work"
"$cargo" new --quiet --vcs none storyhost
cat >> storyhost/Cargo.toml <<TOML
pagoda = { path = "$src/bindings/rust/pagoda", version = "0.1" }
TOML
cat > storyhost/src/main.rs <<'RS'
use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions};

fn main() -> pagoda::Result<()> {
    let path = std::env::args().nth(1).expect("usage: storyhost MODEL");
    let model = Model::open(path)?;
    let mesh = Mesh::new(&MeshOptions::default())?;
    let cache = KvCache::new(&model, &mesh, None, &KvCacheOptions::default())?;
    let engine = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default())?;
    let prompt = "Once upon a time";
    engine.submit_text(prompt, &RequestOptions { max_tokens: 24, ..RequestOptions::greedy() })?;
    let mut story = prompt.to_owned();
    for output in engine.outputs() {
        story.push_str(&output?.text);
    }
    println!("{}", story);
    Ok(())
}
RS
# No lock file yet and no registry: --offline resolves the path dependencies alone.
"$cargo" build --offline --quiet --manifest-path storyhost/Cargo.toml > "$work/host-build.log" 2>&1 ||
    { cat "$work/host-build.log"; fail "cargo build of the host"; }
# The library is in a scratch prefix, not a system folder: the host finds it as any program would.
got=$(LD_LIBRARY_PATH=$libdir storyhost/target/debug/storyhost "$model") || fail "the host failed"
[[ $got == "$want" ]] || fail "the host generated '$got'"
echo "PASS: a cargo new host: the story"
