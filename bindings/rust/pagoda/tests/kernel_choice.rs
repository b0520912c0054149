//! Kernel choice (kernel_choice.h): measured when the engine is made, read back from the file it
//! wrote, or left to the backend's rules.

mod common;

use pagoda::{
    Engine, EngineOptions, KernelChoice, KernelChoiceInfo, KvCache, KvCacheOptions, Mesh, MeshOptions, Model,
    Status,
};
use std::path::PathBuf;

/// An engine on `model` with its own small KV cache (a cache serves one engine at a time; the
/// engine keeps it alive).
fn engine(model: &Model, mesh: &Mesh, options: &EngineOptions) -> pagoda::Result<Engine> {
    let cache =
        KvCache::new(model, mesh, None, &KvCacheOptions { num_blocks: 64, ..KvCacheOptions::default() })?;
    Engine::new(model, mesh, None, &cache, options)
}

fn key(c: &KernelChoiceInfo) -> (String, Option<pagoda::Dtype>, i64, i64, i64, String) {
    (c.device.clone(), c.w_dtype, c.n, c.k, c.m, c.variant.clone())
}

#[test]
fn kernel_choices_are_measured_read_back_or_left_to_the_rules() {
    let defaults = EngineOptions::default();
    assert_eq!((defaults.kernel_choice, defaults.kernel_choices_file), (KernelChoice::File, None));

    let model = Model::open(common::model_path()).unwrap();
    let mesh = Mesh::new(&MeshOptions::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("pagoda-rust-kernel-choice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("choices.json");
    let _ = std::fs::remove_file(&file);

    // Measured: a choice per product shape and power-of-two row count up to the step's 4
    // tokens, written to the file.
    let measure = EngineOptions {
        max_num_batched_tokens: 4,
        kernel_choice: KernelChoice::Measure,
        kernel_choices_file: Some(file.clone()),
        ..EngineOptions::default()
    };
    let measured = engine(&model, &mesh, &measure).unwrap().kernel_choices().unwrap();
    assert!(!measured.is_empty(), "Measure made no kernel choice");
    for c in &measured {
        assert!(["rules", "gemv", "gemv_int8", "sgemm"].contains(&c.variant.as_str()), "{:?}", c);
        assert!((1..=4).contains(&c.m) && c.m & (c.m - 1) == 0, "{:?}", c);
        assert!(c.n > 0 && c.k > 0 && !c.device.is_empty() && c.w_dtype.is_some(), "{:?}", c);
        assert!(c.rules_seconds > 0.0, "{:?}", c);
    }
    assert!(file.exists(), "the measured choices were not written to {:?}", file);

    // Read back (File, the default): the same choices.
    let read_back = EngineOptions { kernel_choices_file: Some(file.clone()), ..EngineOptions::default() };
    let read = engine(&model, &mesh, &read_back).unwrap().kernel_choices().unwrap();
    assert_eq!(read.iter().map(key).collect::<Vec<_>>(), measured.iter().map(key).collect::<Vec<_>>());

    // The rules: no table, the file unread.
    let rules = EngineOptions { kernel_choice: KernelChoice::Rules, ..read_back };
    let e = engine(&model, &mesh, &rules).unwrap();
    assert_eq!(e.kernel_choice_count().unwrap(), 0);
    assert!(e.kernel_choices().unwrap().is_empty());
    assert_eq!(e.kernel_choice(0).unwrap_err().status(), Status::InvalidArgument);
    drop(e);

    let missing =
        EngineOptions { kernel_choices_file: Some(dir.join("missing.json")), ..EngineOptions::default() };
    assert_eq!(engine(&model, &mesh, &missing).unwrap_err().status(), Status::NotFound);
    let nul =
        EngineOptions { kernel_choices_file: Some(PathBuf::from("a\0b.json")), ..EngineOptions::default() };
    assert_eq!(engine(&model, &mesh, &nul).unwrap_err().status(), Status::InvalidArgument);
    std::fs::remove_dir_all(&dir).unwrap();
}
