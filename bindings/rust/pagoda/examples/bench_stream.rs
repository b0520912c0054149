//! Streaming throughput through the binding, to set beside the C benchmark
//! `pagoda-bench-stream` (tests/bench/bench_stream.c): the same flags, the same work, the same
//! output lines.
//!
//!     bench_stream --model PATH [--prompt TEXT] [--max-tokens N] [--repeats R] [--paced]
//!
//! With `--paced`, each repeat waits for a line on standard input, until its end (as the C
//! benchmark's `--paced`).
//!
//! The model, cache and engine are made once, before the clock. Each repeat submits the prompt
//! (greedy, end-of-sequence ignored) and streams it through `Engine::outputs` (step and poll
//! until the request finishes), reading every output's tokens and text as a streaming host
//! would, and prints `tokens_per_s <float>`: tokens polled over the seconds from submit to the
//! last output.

use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    model: PathBuf,
    prompt: String,
    max_tokens: i32,
    repeats: u32,
    paced: bool,
}

const USAGE: &str =
    "usage: bench_stream --model PATH [--prompt TEXT] [--max-tokens N] [--repeats R] [--paced]";

fn parse_args() -> Option<Args> {
    let (mut model, mut prompt, mut max_tokens, mut repeats) = (None, "Once upon a time".to_owned(), 256, 5);
    let mut paced = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--paced" {
            paced = true;
            continue;
        }
        let value = it.next()?;
        match flag.as_str() {
            "--model" => model = Some(PathBuf::from(value)),
            "--prompt" => prompt = value,
            "--max-tokens" => max_tokens = value.parse().ok().filter(|&n| n > 0)?,
            "--repeats" => repeats = value.parse().ok().filter(|&n| n > 0)?,
            _ => return None,
        }
    }
    Some(Args { model: model?, prompt, max_tokens, repeats, paced })
}

/// One repeat: submit, stream to the end; tokens per second. `sink` sums the text's bytes, so
/// that every byte is looked at, as the C benchmark does.
fn repeat(engine: &Engine, args: &Args, options: &RequestOptions, sink: &mut u64) -> pagoda::Result<f64> {
    let start = Instant::now();
    engine.submit_text(&args.prompt, options)?;
    let mut tokens = 0usize;
    for output in engine.outputs() {
        let output = output?;
        if let Some(error) = output.error {
            return Err(error);
        }
        tokens += output.token_ids.len();
        *sink += output.text.bytes().map(u64::from).sum::<u64>();
        if output.request_finished {
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    if tokens == 0 {
        return Err(pagoda::Error::new(pagoda::Status::Internal, "the engine streamed no token"));
    }
    Ok(tokens as f64 / seconds)
}

fn run(args: &Args) -> pagoda::Result<()> {
    let model = Model::open(&args.model)?;
    let mesh = Mesh::new(&MeshOptions::default())?;
    let cache = KvCache::new(&model, &mesh, None, &KvCacheOptions::default())?;
    let engine = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default())?;
    let options =
        RequestOptions { max_tokens: args.max_tokens, ignore_eos: true, ..RequestOptions::greedy() };
    let mut sink = 0u64;
    let mut lines = std::io::stdin().lines();
    for r in 0.. {
        let go = if args.paced { matches!(lines.next(), Some(Ok(_))) } else { r < args.repeats };
        if !go {
            break;
        }
        println!("tokens_per_s {:.1}", repeat(&engine, args, &options, &mut sink)?);
    }
    if sink == 1 {
        eprintln!(); // keeps the text reads from being optimised away
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Some(args) => args,
        None => {
            eprintln!("{}", USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_stream: {}", e);
            ExitCode::FAILURE
        }
    }
}
