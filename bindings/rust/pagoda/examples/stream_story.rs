//! Streams a story from stories260K, piece by piece, as the engine produces it.
//!
//!     cargo run --example stream_story -- [--model PATH] [--prompt TEXT] [--max-tokens N]
//!
//! The model defaults to `PAGODA_MODEL`, else the copy bundled in the source tree.

use pagoda::{Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

struct Args {
    model: PathBuf,
    prompt: String,
    max_tokens: i32,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        model: std::env::var_os("PAGODA_MODEL").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../tests/fixtures/models/stories260K/stories260K.gguf")
        }),
        prompt: "Once upon a time".to_owned(),
        max_tokens: 200,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{} needs a value", flag))?;
        match flag.as_str() {
            "--model" => args.model = PathBuf::from(value),
            "--prompt" => args.prompt = value,
            "--max-tokens" => {
                args.max_tokens =
                    value.parse().map_err(|_| format!("--max-tokens wants an integer, not {:?}", value))?
            }
            _ => return Err(format!("unknown option {:?}", flag)),
        }
    }
    Ok(args)
}

fn stream(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let model = Model::open(&args.model)?;
    let mesh = Mesh::new(&MeshOptions::default())?;
    let cache = KvCache::new(&model, &mesh, None, &KvCacheOptions::default())?;
    let engine = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default())?;
    let options = RequestOptions {
        max_tokens: args.max_tokens,
        temperature: 0.8,
        top_k: 40,
        seed: Some(42),
        ..RequestOptions::default()
    };
    engine.submit_text(&args.prompt, &options)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    write!(out, "{}", args.prompt)?;
    let mut tokens = 0;
    for output in engine.outputs() {
        let output = output?;
        tokens += output.token_ids.len();
        write!(out, "{}", output.text)?;
        out.flush()?;
        if let Some(error) = output.error {
            return Err(error.into());
        }
    }
    writeln!(out)?;
    if tokens == 0 {
        return Err("the engine streamed no token".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("stream_story: {}", why);
            return ExitCode::from(2);
        }
    };
    match stream(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stream_story: {}", e);
            ExitCode::FAILURE
        }
    }
}
