//! Failures come back as `Error`s carrying the library's status and message.

mod common;

use pagoda::{Mesh, MeshOptions, Model, Plan, RequestOptions, Status, Tokenizer};

#[test]
fn a_missing_model_file_names_the_file() {
    let path = "/nonexistent/pagoda-rust-test/missing.gguf";
    let err = Model::open(path).unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    assert!(err.message().contains(path), "the message should name the file: {:?}", err.message());
    // Display carries both the sentence and the status's name.
    let shown = err.to_string();
    assert!(shown.contains(path) && shown.contains("PAGODA_ERR_NOT_FOUND"), "{}", shown);
}

#[test]
fn the_message_is_this_threads_and_this_calls() {
    // Another failure on another thread at the same time does not leak into this one's error.
    let other = std::thread::spawn(|| Plan::from_json("{}").unwrap_err());
    let err = Model::open("/nonexistent/a.gguf").unwrap_err();
    let other = other.join().unwrap();
    assert!(err.message().contains("/nonexistent/a.gguf"));
    assert_eq!(other.status(), Status::Format);
    assert!(!other.message().contains("a.gguf"));
}

#[test]
fn bad_arguments_are_refused_with_the_librarys_sentence() {
    let s = common::stack();
    let bare = RequestOptions { no_special_tokens: true, ..RequestOptions::greedy() };
    let err = s.engine.submit_text("", &bare).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(!err.message().is_empty());
    assert_eq!(s.engine.submit_tokens(&[], &bare).unwrap_err().status(), Status::InvalidArgument);

    let err = s
        .engine
        .submit_text("Once", &RequestOptions { top_p: 2.0, ..RequestOptions::default() })
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("top_p"), "{:?}", err.message());

    let err = s.engine.submit_tokens(&[1, 1_000_000], &RequestOptions::greedy()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);

    let err = s.engine.abort(123_456).unwrap_err();
    assert_eq!(err.status(), Status::NotFound);

    let tokenizer = Tokenizer::from_model(&s.model).unwrap();
    assert_eq!(tokenizer.encode("x", 1 << 20).unwrap_err().status(), Status::InvalidArgument);
    assert_eq!(tokenizer.decode(&[-1], 0).unwrap_err().status(), Status::InvalidArgument);
    assert_eq!(tokenizer.token_to_piece(-1).unwrap_err().status(), Status::InvalidArgument);

    let err =
        Mesh::new(&MeshOptions { devices: Some("nosuch:0".into()), ..MeshOptions::default() }).unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    assert!(err.message().contains("nosuch"), "{:?}", err.message());
}

#[test]
fn a_nul_byte_is_refused_before_reaching_c() {
    let err = Model::open("stories\0.gguf").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("NUL"));
    let s = common::stack();
    let options = RequestOptions { stop_strings: vec!["a\0b".into()], ..RequestOptions::greedy() };
    assert_eq!(s.engine.submit_text("Once", &options).unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn a_malformed_plan_names_the_field() {
    let err = Plan::from_json("{\"format\": \"pagoda-plan\", \"version\": 1}").unwrap_err();
    assert_eq!(err.status(), Status::Format);
    assert!(!err.message().is_empty());
}

#[test]
fn statuses_round_trip_and_have_the_librarys_names() {
    for code in 1..=14 {
        let status = Status::from_raw(code);
        assert_eq!(status.raw(), code);
        assert!(!matches!(status, Status::Other(_)), "code {} is known", code);
        assert!(status.name().starts_with("PAGODA_ERR_"));
    }
    assert_eq!(Status::NotFound.name(), "PAGODA_ERR_NOT_FOUND");
    assert_eq!(Status::from_raw(999), Status::Other(999));
    assert_eq!(Status::Other(999).name(), "PAGODA_ERR_UNKNOWN");
}
