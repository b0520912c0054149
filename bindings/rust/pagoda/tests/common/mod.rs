//! What the tests share: where the model and the reference program are, and a full stack
//! (model, mesh, KV cache, engine) on the CPU.
#![allow(dead_code)]

use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model};
use std::path::PathBuf;

/// The bundled stories260K: `PAGODA_MODEL`, or its place in the source tree.
pub fn model_path() -> PathBuf {
    match std::env::var_os("PAGODA_MODEL") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../tests/fixtures/models/stories260K/stories260K.gguf"),
    }
}

/// The `pagoda` command, whose `generate` gives the reference text: `PAGODA_CLI` (CTest sets
/// it), else the one installed in the `bindir` of the libpagoda that pkg-config finds. `None`
/// after printing why when there is neither: the caller skips its check. Under
/// `PAGODA_TEST_STRICT=1` (CTest) a missing program fails instead.
pub fn cli_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PAGODA_CLI") {
        return Some(PathBuf::from(path));
    }
    let why = match pkg_config_variable("bindir") {
        Ok(dir) => {
            let path = PathBuf::from(dir).join("pagoda");
            if path.is_file() {
                return Some(path);
            }
            format!("no {:?} (the bindir of pkg-config's pagoda)", path)
        }
        Err(why) => why,
    };
    assert!(std::env::var_os("PAGODA_TEST_STRICT").map_or(true, |v| v != "1"), "no pagoda command: {}", why);
    eprintln!("skipping the comparison with `pagoda generate`: PAGODA_CLI is not set and {}", why);
    None
}

/// A variable of pagoda.pc, as `pkg-config --variable=NAME pagoda` prints it.
fn pkg_config_variable(name: &str) -> Result<String, String> {
    let program = std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_owned());
    let out = std::process::Command::new(&program)
        .arg(format!("--variable={}", name))
        .arg("pagoda")
        .output()
        .map_err(|e| format!("cannot run {}: {}", program, e))?;
    let value = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || value.is_empty() {
        return Err(format!("{} has no {} for pagoda: {}", program, name, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(value)
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
