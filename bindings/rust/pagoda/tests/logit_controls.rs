//! Logit controls and seeds through the binding: a bias that forces a token, allowed ids, bad
//! words, min_tokens, and `seed: None` (a fresh seed per request) against a fixed seed.

mod common;

use pagoda::{Engine, Output, RequestOptions};

const PROMPT: &str = "Once upon a time";

/// Submits one request, drives the engine until it has no work, and returns its token ids.
fn tokens(engine: &Engine, options: &RequestOptions) -> Vec<i32> {
    engine.submit_text(PROMPT, options).unwrap();
    let outputs = engine.outputs().collect::<pagoda::Result<Vec<Output>>>().expect("generating");
    outputs.iter().flat_map(|o| o.token_ids.clone()).collect()
}

#[test]
fn a_bias_forces_its_token() {
    let s = common::stack();
    let options = RequestOptions {
        max_tokens: 8,
        ignore_eos: true,
        logit_bias: vec![(300, 100.0), (1, -100.0)],
        ..RequestOptions::default()
    };
    assert_eq!(tokens(&s.engine, &options), vec![300; 8]);
    let too_big = RequestOptions { logit_bias: vec![(300, 101.0)], ..RequestOptions::default() };
    assert!(s.engine.submit_text(PROMPT, &too_big).is_err());
}

#[test]
fn allowed_ids_bad_words_and_min_tokens() {
    let s = common::stack();
    let allowed = [100, 200, 201, 350];
    let options = RequestOptions {
        max_tokens: 16,
        ignore_eos: true,
        allowed_token_ids: allowed.to_vec(),
        ..RequestOptions::default()
    };
    let got = tokens(&s.engine, &options);
    assert_eq!(got.len(), 16);
    assert!(got.iter().all(|t| allowed.contains(t)), "{got:?}");

    let greedy = RequestOptions { max_tokens: 6, ignore_eos: true, ..RequestOptions::greedy() };
    let plain = tokens(&s.engine, &greedy);
    let banned = RequestOptions { bad_words: vec![vec![plain[0]]], ..greedy.clone() };
    assert_ne!(tokens(&s.engine, &banned)[0], plain[0]);

    let held = RequestOptions { max_tokens: 40, min_tokens: 30, ..RequestOptions::greedy() };
    assert!(tokens(&s.engine, &held).len() >= 30);
}

#[test]
fn no_seed_differs_and_a_seed_repeats() {
    let s = common::stack();
    let options = |seed| RequestOptions {
        max_tokens: 32,
        temperature: 1.0,
        ignore_eos: true,
        seed,
        ..RequestOptions::default()
    };
    assert_eq!(RequestOptions::default().seed, Some(0));
    assert_ne!(tokens(&s.engine, &options(None)), tokens(&s.engine, &options(None)));
    assert_eq!(tokens(&s.engine, &options(Some(11))), tokens(&s.engine, &options(Some(11))));
}
