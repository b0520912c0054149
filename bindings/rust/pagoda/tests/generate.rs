//! Generation through the binding: the same greedy text as `pagoda generate`, token prompts,
//! several sequences, beam search, log-probabilities, stop strings and statistics.

mod common;

use pagoda::{Engine, FinishReason, Output, RequestOptions, Tokenizer, TOKENIZE_ADD_SPECIAL};
use std::process::Command;

const PROMPT: &str = "Once upon a time";

/// Drives the engine until it has no work; returns every output, in order.
fn run(engine: &Engine) -> Vec<Output> {
    engine.outputs().collect::<pagoda::Result<Vec<Output>>>().expect("generating")
}

fn text_of(outputs: &[Output], sequence: i32) -> String {
    outputs.iter().filter(|o| o.sequence_index == sequence).map(|o| o.text.as_str()).collect()
}

#[test]
fn greedy_text_is_the_text_of_pagoda_generate() {
    let max_tokens = 48;
    let cli = match common::cli_path() {
        Some(cli) => cli,
        None => return,
    };
    let reference = Command::new(cli)
        .args(["generate", "--model"])
        .arg(common::model_path())
        .args(["--prompt", PROMPT, "--temperature", "0", "--max-tokens", &max_tokens.to_string()])
        .output()
        .expect("running pagoda generate");
    assert!(
        reference.status.success(),
        "pagoda generate failed: {}",
        String::from_utf8_lossy(&reference.stderr)
    );
    // pagoda generate prints the prompt, the text as it comes, and a newline.
    let reference = String::from_utf8(reference.stdout).expect("UTF-8 from pagoda generate");

    let s = common::stack();
    let options = RequestOptions { max_tokens, ..RequestOptions::greedy() };
    let id = s.engine.submit_text(PROMPT, &options).unwrap();
    let outputs = run(&s.engine);
    assert!(outputs.iter().all(|o| o.request_id == id));
    let last = outputs.last().expect("no output");
    assert!(last.request_finished);
    assert!(matches!(last.finish_reason, Some(FinishReason::Length) | Some(FinishReason::StopToken)));
    let text = text_of(&outputs, 0);
    assert!(!text.is_empty());
    assert_eq!(format!("{}{}\n", PROMPT, text), reference);
}

#[test]
fn a_token_prompt_gives_what_its_text_gives() {
    let s = common::stack();
    let tokenizer = Tokenizer::from_model(&s.model).unwrap();
    let ids = tokenizer.encode(PROMPT, TOKENIZE_ADD_SPECIAL).unwrap();
    let options = RequestOptions { max_tokens: 24, ..RequestOptions::greedy() };
    s.engine.submit_text(PROMPT, &options).unwrap();
    let from_text = run(&s.engine);
    s.engine.submit_tokens(&ids, &options).unwrap();
    let from_ids = run(&s.engine);
    assert_eq!(from_text[0].n_prompt_tokens, ids.len());
    let tokens = |outs: &[Output]| outs.iter().flat_map(|o| o.token_ids.clone()).collect::<Vec<i32>>();
    assert_eq!(tokens(&from_text), tokens(&from_ids));
    assert_eq!(text_of(&from_text, 0), text_of(&from_ids, 0));
    // The streamed text is the decoding of the streamed tokens.
    assert_eq!(tokenizer.decode(&tokens(&from_ids), 0).unwrap(), text_of(&from_ids, 0));
}

#[test]
fn several_sequences_and_beams_come_back_with_their_index() {
    let s = common::stack();
    let sampled =
        RequestOptions { n: 3, max_tokens: 12, seed: Some(7), temperature: 1.0, ..RequestOptions::default() };
    s.engine.submit_text(PROMPT, &sampled).unwrap();
    let outputs = run(&s.engine);
    let finished: Vec<i32> =
        outputs.iter().filter(|o| o.finish_reason.is_some()).map(|o| o.sequence_index).collect();
    assert_eq!(finished.len(), 3, "one last output per sequence");
    for sequence in 0..3 {
        assert!(finished.contains(&sequence));
        assert!(!text_of(&outputs, sequence).is_empty());
    }
    assert_eq!(outputs.iter().filter(|o| o.request_finished).count(), 1);

    let beams = RequestOptions { n: 2, beam_width: 3, max_tokens: 12, ..RequestOptions::greedy() };
    s.engine.submit_text(PROMPT, &beams).unwrap();
    let outputs = run(&s.engine);
    let mut ranked: Vec<(i32, f32)> = outputs
        .iter()
        .filter(|o| o.finish_reason.is_some())
        .map(|o| (o.sequence_index, o.cumulative_logprob))
        .collect();
    ranked.sort_by_key(|r| r.0);
    assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1]);
    assert!(ranked.iter().all(|r| r.1 < 0.0));
}

#[test]
fn log_probabilities_of_generated_and_prompt_tokens() {
    let s = common::stack();
    let options = RequestOptions {
        max_tokens: 8,
        logprobs: Some(3),
        prompt_logprobs: Some(2),
        ..RequestOptions::greedy()
    };
    s.engine.submit_text(PROMPT, &options).unwrap();
    let outputs = run(&s.engine);
    let first = &outputs[0];
    let prompt = first.prompt_logprobs.as_ref().expect("prompt logprobs in the first output");
    assert_eq!(prompt.len(), first.n_prompt_tokens);
    assert!(prompt[0].is_nan(), "position 0 has nothing before it");
    assert!(prompt[1..].iter().all(|&l| l <= 0.0));
    let prompt_top = first.prompt_top_logprobs.as_ref().unwrap();
    assert!(prompt_top[1..].iter().all(|row| row.len() == 2));
    assert!(outputs[1..].iter().all(|o| o.prompt_logprobs.is_none()));
    for o in &outputs {
        let logprobs = o.logprobs.as_ref().expect("logprobs in every output");
        let top = o.top_logprobs.as_ref().expect("top logprobs in every output");
        assert_eq!(logprobs.len(), o.token_ids.len());
        for ((&id, &lp), row) in o.token_ids.iter().zip(logprobs).zip(top) {
            assert_eq!(row.len(), 3);
            assert!(row.windows(2).all(|w| w[0].logprob >= w[1].logprob), "most likely first");
            // Greedy: the chosen token is the most likely one.
            assert_eq!(row[0].token_id, id);
            assert!((row[0].logprob - lp).abs() < 1e-5);
        }
    }
}

#[test]
fn a_stop_string_ends_the_request() {
    let s = common::stack();
    let free = RequestOptions { max_tokens: 48, ..RequestOptions::greedy() };
    s.engine.submit_text(PROMPT, &free).unwrap();
    let text = text_of(&run(&s.engine), 0);
    // Stop at a word the free run produces after its first few characters.
    let word = text.split_whitespace().nth(3).expect("a few words").to_owned();
    let stop = RequestOptions { stop_strings: vec![word.clone()], ..free };
    s.engine.submit_text(PROMPT, &stop).unwrap();
    let outputs = run(&s.engine);
    assert_eq!(outputs.last().unwrap().finish_reason, Some(FinishReason::StopString));
    let stopped = text_of(&outputs, 0);
    assert!(!stopped.contains(&word), "{:?} should end before {:?}", stopped, word);
    assert!(text.starts_with(&stopped));
}

#[test]
fn statistics_count_what_was_generated() {
    let s = common::stack();
    let options = RequestOptions { max_tokens: 10, ignore_eos: true, ..RequestOptions::greedy() };
    s.engine.submit_text(PROMPT, &options).unwrap();
    let generated: usize = run(&s.engine).iter().map(|o| o.token_ids.len()).sum();
    assert_eq!(generated, 10);
    let stats = s.engine.stats().unwrap();
    assert_eq!(stats.generated_tokens, 10);
    assert_eq!(stats.requests_finished, 1);
    assert!(stats.steps >= 10);
    let metrics = s.engine.metrics().unwrap();
    assert_eq!(metrics.generation_tokens, 10);
    assert_eq!(metrics.requests_finished_length, 1);
    assert_eq!(metrics.e2e_request_latency.count, 1);
    assert!(!metrics.time_to_first_token.upper_bounds.is_empty());
    assert_eq!(
        metrics.time_to_first_token.upper_bounds.len(),
        metrics.time_to_first_token.cumulative_counts.len()
    );
    assert_eq!(s.engine.device_count().unwrap(), 1);
    let device = s.engine.device_stats(0).unwrap();
    assert_eq!(device.device, "cpu:0");
    assert!(device.weight_bytes > 0);
    // The bundled model is dense: no expert parallelism, no expert weights.
    assert_eq!((device.ep_rank, device.ep_size, device.expert_weight_bytes), (0, 1, 0));
    assert!(s.engine.device_stats(1).is_err());
    let cache = s.cache.stats().unwrap();
    assert_eq!(cache.blocks_total, 256);
    assert_eq!(cache.sequences, 0, "the request's blocks went back");
}
