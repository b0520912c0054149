//! Aborting a request while it streams.

mod common;

use pagoda::{FinishReason, RequestOptions, Status};

#[test]
fn abort_mid_stream_ends_the_request_with_aborted() {
    let s = common::stack();
    let options = RequestOptions { max_tokens: 200, ignore_eos: true, ..RequestOptions::greedy() };
    let id = s.engine.submit_text("Once upon a time", &options).unwrap();
    let mut tokens = 0;
    let mut last = None;
    for output in s.engine.outputs() {
        let output = output.unwrap();
        tokens += output.token_ids.len();
        if tokens >= 5 && output.finish_reason.is_none() && last.is_none() {
            s.engine.abort(id).unwrap();
            last = Some(tokens);
        }
        if output.request_finished {
            assert_eq!(output.finish_reason, Some(FinishReason::Aborted));
            assert!(output.error.is_none());
        }
    }
    let aborted_at = last.expect("the stream ended before the abort");
    assert!(tokens < 200, "generation went on to max_tokens after the abort");
    assert_eq!(tokens, aborted_at, "no token after the abort");
    // The request is gone: a second abort finds nothing.
    assert_eq!(s.engine.abort(id).unwrap_err().status(), Status::NotFound);
    assert_eq!(s.engine.stats().unwrap().requests_finished, 1);
    assert_eq!(s.engine.metrics().unwrap().requests_finished_aborted, 1);
}
