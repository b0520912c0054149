//! Model-load progress: a closure on the opening thread, cancellation, panics resumed on the
//! caller's side; and the background loader polled instead.

mod common;

use pagoda::{Model, Status};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn progress_rises_to_one() {
    let mut seen: Vec<f32> = Vec::new();
    let mut stages = 0;
    let model = Model::open_with_progress(common::model_path(), |fraction, stage| {
        seen.push(fraction);
        stages += usize::from(!stage.is_empty());
        true
    })
    .unwrap();
    assert!(!seen.is_empty(), "the callback never ran");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "never decreasing: {:?}", seen);
    assert_eq!(*seen.last().unwrap(), 1.0);
    assert!(stages > 0);
    assert!(model.info().unwrap().n_layers > 0);
}

#[test]
fn returning_false_cancels_the_open() {
    let err = Model::open_with_progress(common::model_path(), |_, _| false).unwrap_err();
    assert_eq!(err.status(), Status::Cancelled);
}

#[test]
fn a_panic_in_the_callback_comes_back_to_the_caller() {
    let mut calls = 0;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        Model::open_with_progress(common::model_path(), |_, _| {
            calls += 1;
            panic!("progress callback panics");
        })
    }));
    let payload = caught.expect_err("the panic was lost");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"progress callback panics"));
    assert_eq!(calls, 1, "the open was cancelled at the first panic");
}

#[test]
fn the_background_loader_is_polled_and_finished() {
    let loader = Model::load_start(common::model_path()).unwrap();
    loop {
        let (fraction, done) = loader.progress().unwrap();
        assert!((0.0..=1.0).contains(&fraction));
        if done {
            break;
        }
        std::thread::yield_now();
    }
    let model = loader.finish().unwrap();
    assert_eq!(model.info().unwrap().architecture, "llama");

    // A missing file fails at finish, with the library's message.
    let err = Model::load_start("/nonexistent/b.gguf").unwrap().finish().unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    assert!(err.message().contains("/nonexistent/b.gguf"));

    // Cancelled, or dropped unfinished: nothing leaks or crashes.
    let loader = Model::load_start(common::model_path()).unwrap();
    loader.cancel();
    match loader.finish() {
        Ok(_) => {} // it had finished already
        Err(e) => assert_eq!(e.status(), Status::Cancelled),
    }
    drop(Model::load_start(common::model_path()).unwrap());
}
