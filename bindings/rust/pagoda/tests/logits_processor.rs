//! A Rust closure as a request's logits processor: it sees the prompt and the tokens so far,
//! its changes to the row decide the tokens, an `Err` or a panic cancels the request, and the
//! engine drops it once the request is over.

mod common;

use pagoda::{
    FinishReason, LogitsProcessor, Output, RequestOptions, Status, Tokenizer, TOKENIZE_ADD_SPECIAL,
};
use std::sync::{Arc, Mutex};

const PROMPT: &str = "Once upon a time";
const KEPT: i32 = 300;

/// What the processor saw on one call.
#[derive(Debug)]
struct Call {
    request_id: u64,
    sequence_index: i32,
    prompt: Vec<i32>,
    generated: Vec<i32>,
    n_logits: usize,
}

/// Drives the engine until it has no work; every output.
fn run(engine: &pagoda::Engine) -> Vec<Output> {
    engine.outputs().collect::<pagoda::Result<Vec<Output>>>().expect("generating")
}

#[test]
fn a_processor_that_keeps_one_token_decides_every_token() {
    let s = common::stack();
    let calls = Arc::new(Mutex::new(Vec::<Call>::new()));
    let seen = Arc::clone(&calls);
    let processor = LogitsProcessor::new(move |ctx, logits| {
        seen.lock().unwrap().push(Call {
            request_id: ctx.request_id,
            sequence_index: ctx.sequence_index,
            prompt: ctx.prompt().to_vec(),
            generated: ctx.generated().to_vec(),
            n_logits: logits.len(),
        });
        for (id, logit) in logits.iter_mut().enumerate() {
            if id as i32 != KEPT {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    });
    // Sampled at temperature 1: without the processor these tokens would vary.
    let options = RequestOptions {
        max_tokens: 8,
        ignore_eos: true,
        temperature: 1.0,
        seed: Some(5),
        logits_processor: Some(processor),
        ..RequestOptions::default()
    };
    let id = s.engine.submit_text(PROMPT, &options).unwrap();
    let outputs = run(&s.engine);
    let tokens: Vec<i32> = outputs.iter().flat_map(|o| o.token_ids.clone()).collect();
    assert_eq!(tokens, vec![KEPT; 8]);
    assert!(outputs.iter().all(|o| o.error.is_none()), "{outputs:?}");

    let prompt = Tokenizer::from_model(&s.model).unwrap().encode(PROMPT, TOKENIZE_ADD_SPECIAL).unwrap();
    let vocabulary = s.model.info().unwrap().vocab_size as usize;
    let log = calls.lock().unwrap();
    assert_eq!(log.len(), 8, "one call per generated token");
    for (i, call) in log.iter().enumerate() {
        assert_eq!((call.request_id, call.sequence_index), (id, 0));
        assert_eq!(call.prompt, prompt, "call {i}");
        assert_eq!(call.generated, vec![KEPT; i], "call {i}: the tokens generated before it");
        assert_eq!(call.n_logits, vocabulary);
    }
    drop(log);
    // The request is over and `options` held the last other copy: the engine let go of its own.
    drop(options);
    assert_eq!(Arc::strong_count(&calls), 1, "the closure (and what it captured) was dropped");
}

/// The request's outputs, when its processor fails on call `fail_at` with `fail`.
fn failing(fail_at: usize, fail: fn() -> Result<(), pagoda::ProcessorError>) -> Vec<Output> {
    let s = common::stack();
    let mut calls = 0;
    let processor = LogitsProcessor::new(move |_, _| {
        calls += 1;
        if calls == fail_at {
            fail()
        } else {
            Ok(())
        }
    });
    let options = RequestOptions {
        max_tokens: 16,
        ignore_eos: true,
        logits_processor: Some(processor),
        ..RequestOptions::greedy()
    };
    s.engine.submit_text(PROMPT, &options).unwrap();
    run(&s.engine)
}

fn assert_cancelled(outputs: &[Output], generated: usize, reason: &str) {
    let last = outputs.last().expect("no output");
    assert!(last.request_finished);
    assert_eq!(last.finish_reason, Some(FinishReason::Error));
    let error = last.error.as_ref().expect("no error on the failed output");
    assert_eq!(error.status(), Status::Cancelled);
    assert!(error.message().contains(reason), "{error}");
    let tokens: usize = outputs.iter().map(|o| o.token_ids.len()).sum();
    assert_eq!(tokens, generated, "tokens before the failing call");
}

#[test]
fn an_error_cancels_the_request_with_its_reason() {
    let outputs = failing(3, || Err("no third token".into()));
    assert_cancelled(&outputs, 2, "returned 1: no third token");
}

#[test]
fn a_panic_cancels_the_request_without_unwinding_into_c() {
    let outputs = failing(1, || panic!("processor bug"));
    assert_cancelled(&outputs, 0, "returned 1: panicked: processor bug");
}

#[test]
fn the_engine_drops_the_processor_of_a_request_still_running() {
    let s = common::stack();
    let state = Arc::new(());
    let held = Arc::clone(&state);
    let processor = LogitsProcessor::new(move |_, _| {
        let _ = &held;
        Ok(())
    });
    let options = RequestOptions { max_tokens: 64, ignore_eos: true, ..RequestOptions::greedy() };
    let options = RequestOptions { logits_processor: Some(processor), ..options };
    s.engine.submit_text(PROMPT, &options).unwrap();
    s.engine.step().unwrap();
    drop(options);
    assert_eq!(Arc::strong_count(&state), 2, "the running request keeps its processor");
    drop(s);
    assert_eq!(Arc::strong_count(&state), 1, "dropping the engine dropped the processor");
}
