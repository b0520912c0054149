//! Streaming throughput through the binding, to set beside the C benchmark
//! `pagoda-bench-stream`: the same flags, the same work, the same output lines.
//!
//!     bench_stream --model PATH --prompt TEXT --max-tokens N --repeats R
//!
//! Greedy, end-of-sequence ignored, one request at a time. Each repeat submits the prompt and
//! streams it through `Engine::outputs` (step and poll until the request finishes), taking every
//! output's tokens and text as a streaming host would, and prints `tokens_per_s <float>`:
//! tokens polled over the seconds from submit to the last output.

use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    model: PathBuf,
    prompt: String,
    max_tokens: i32,
    repeats: u32,
}

fn parse_args() -> Result<Args, String> {
    let (mut model, mut prompt, mut max_tokens, mut repeats) = (None, None, None, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{} needs a value", flag))?;
        let number = |v: &str| {
            v.parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{} wants a positive integer, not {:?}", flag, v))
        };
        match flag.as_str() {
            "--model" => model = Some(PathBuf::from(value)),
            "--prompt" => prompt = Some(value),
            "--max-tokens" => {
                max_tokens =
                    Some(i32::try_from(number(&value)?).map_err(|_| "--max-tokens is too large".to_owned())?)
            }
            "--repeats" => repeats = Some(number(&value)?),
            _ => return Err(format!("unknown option {:?}", flag)),
        }
    }
    let usage = "usage: bench_stream --model PATH --prompt TEXT --max-tokens N --repeats R";
    Ok(Args {
        model: model.ok_or(usage)?,
        prompt: prompt.ok_or(usage)?,
        max_tokens: max_tokens.ok_or(usage)?,
        repeats: repeats.ok_or(usage)?,
    })
}

/// One repeat: submit, stream to the end; tokens per second.
fn repeat(engine: &Engine, args: &Args, options: &RequestOptions) -> pagoda::Result<f64> {
    let start = Instant::now();
    engine.submit_text(&args.prompt, options)?;
    let mut tokens = 0usize;
    // Each output arrives with its tokens copied and its text decoded into a String, as any
    // host streaming through the binding gets it.
    for output in engine.outputs() {
        let output = output?;
        if let Some(error) = output.error {
            return Err(error);
        }
        tokens += output.token_ids.len();
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
    let mut cache = KvCache::new(&model, &mesh, None, &KvCacheOptions::default())?;
    let engine = Engine::new(&model, &mesh, None, &mut cache, &EngineOptions::default())?;
    let options =
        RequestOptions { max_tokens: args.max_tokens, ignore_eos: true, ..RequestOptions::greedy() };
    for _ in 0..args.repeats {
        println!("tokens_per_s {:.3}", repeat(&engine, args, &options)?);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("bench_stream: {}", why);
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
