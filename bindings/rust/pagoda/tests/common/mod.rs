//! What the tests share: where the model and the reference program are, and a full stack
//! (model, mesh, KV cache, engine) on the CPU.
#![allow(dead_code)]

use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model};
use std::path::PathBuf;

#[path = "../../../pagoda-sys/tests/support/installed_program.rs"]
mod installed;

/// The bundled stories260K: `PAGODA_MODEL`, or its place in the source tree.
pub fn model_path() -> PathBuf {
    match std::env::var_os("PAGODA_MODEL") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../tests/fixtures/models/stories260K/stories260K.gguf"),
    }
}

/// The `pagoda` command, whose `generate` gives the reference text: `PAGODA_CLI` (CTest sets
/// it), else the one in the `bindir` of the libpagoda that pkg-config finds; `None` (the caller
/// skips its check) when there is neither.
pub fn cli_path() -> Option<PathBuf> {
    installed::installed_program("PAGODA_CLI", "bindir", "pagoda", "the comparison with `pagoda generate`")
}

pub struct Stack {
    pub model: Model,
    pub mesh: Mesh,
    pub cache: KvCache,
    pub engine: Engine,
}

/// stories260K on cpu:0 with a small KV cache, so that tests running at once stay light.
pub fn stack() -> Stack {
    let model = Model::open(model_path()).expect("opening stories260K");
    let mesh = Mesh::new(&MeshOptions::default()).expect("making the mesh");
    let options = KvCacheOptions { num_blocks: 256, ..KvCacheOptions::default() };
    let cache = KvCache::new(&model, &mesh, None, &options).expect("making the KV cache");
    let engine =
        Engine::new(&model, &mesh, None, &cache, &EngineOptions::default()).expect("making the engine");
    Stack { model, mesh, cache, engine }
}
