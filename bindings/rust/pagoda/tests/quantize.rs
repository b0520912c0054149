//! `quantize`: the bundled model rewritten in Q8_0 opens; the library's errors come back.

mod common;

use pagoda::{quantize, Model, QuantType, Status};

#[test]
fn q8_0_quantizes_and_opens() {
    let dir = std::env::temp_dir().join(format!("pagoda-rust-quantize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("q8.gguf");
    let stats = quantize(common::model_path(), &out, QuantType::Q8_0, 2).unwrap();
    assert_eq!(stats.types.len(), 1, "{:?}", stats);
    let q8 = &stats.types[0];
    assert!(q8.name == "Q8_0" && q8.ggml_type == 8 && q8.tensors > 0, "{:?}", q8);
    assert!(q8.relative_rmse > 0.0 && q8.relative_rmse < 0.01, "{:?}", q8);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), stats.output_bytes);
    drop(Model::open(&out).unwrap());

    let err = quantize(&out, dir.join("again.gguf"), QuantType::Q4KM, 0).unwrap_err();
    assert_eq!(err.status(), Status::Unsupported);
    assert!(err.message().contains("already Q8_0"), "{}", err.message());
    let err = quantize("/nonexistent/m.gguf", dir.join("x.gguf"), QuantType::Q6K, 0).unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    std::fs::remove_dir_all(&dir).unwrap();
}
