//! Use from several threads, where the C headers allow it.

mod common;

use pagoda::{
    Backend, Engine, EngineOptions, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, ModelLoader, Output,
    Plan, RequestOptions, Tokenizer, TOKENIZE_ADD_SPECIAL,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

const PROMPTS: [&str; 3] = ["Once upon a time", "The little dog", "Lily wanted to"];

fn options() -> RequestOptions {
    RequestOptions { max_tokens: 32, ..RequestOptions::greedy() }
}

/// The greedy text of each prompt, generated alone on one thread.
fn reference(engine: &Engine) -> Vec<String> {
    PROMPTS
        .iter()
        .map(|p| {
            engine.submit_text(p, &options()).unwrap();
            engine.outputs().map(|o| o.unwrap().text).collect()
        })
        .collect()
}

/// Texts by request id, from outputs in any order.
fn texts(outputs: &[Output]) -> BTreeMap<u64, String> {
    let mut texts = BTreeMap::new();
    for o in outputs {
        texts.entry(o.request_id).or_insert_with(String::new).push_str(&o.text);
    }
    texts
}

#[test]
fn the_handles_are_send_and_sync_as_the_headers_say() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
    send_sync::<ModelLoader>();
    send_sync::<Tokenizer>();
    send_sync::<Mesh>();
    send_sync::<Plan>();
    send_sync::<KvCache>();
    send_sync::<Engine>();
    send_sync::<Backend>();
    send_sync::<pagoda::Error>();
}

#[test]
fn one_thread_steps_while_others_submit_and_poll() {
    let s = common::stack();
    let expected = reference(&s.engine);
    let engine = Arc::new(s.engine);
    let cache = Arc::new(s.cache);
    let done = Arc::new(AtomicBool::new(false));

    let stepper = {
        let (engine, done) = (engine.clone(), done.clone());
        thread::spawn(move || {
            let mut steps = 0;
            while !done.load(Ordering::Acquire) {
                if engine.has_work().unwrap() {
                    engine.step().unwrap();
                    steps += 1;
                } else {
                    thread::yield_now();
                }
            }
            steps
        })
    };
    // Statistics from a third thread while the engine steps.
    let watcher = {
        let (engine, cache, done) = (engine.clone(), cache.clone(), done.clone());
        thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                let stats = cache.stats().unwrap();
                assert!(stats.blocks_used <= stats.blocks_total);
                engine.metrics().unwrap();
            }
        })
    };
    let ids: Vec<u64> = PROMPTS.iter().map(|p| engine.submit_text(p, &options()).unwrap()).collect();
    let mut outputs = Vec::new();
    let mut finished = 0;
    while finished < ids.len() {
        match engine.poll().unwrap() {
            Some(o) => {
                finished += usize::from(o.request_finished);
                outputs.push(o);
            }
            None => thread::yield_now(),
        }
    }
    done.store(true, Ordering::Release);
    assert!(stepper.join().unwrap() > 0);
    watcher.join().unwrap();

    let texts = texts(&outputs);
    for (id, want) in ids.iter().zip(&expected) {
        assert_eq!(&texts[id], want);
    }
}

#[test]
fn two_threads_stream_the_same_engine_at_once() {
    let s = common::stack();
    let expected = reference(&s.engine);
    let engine = Arc::new(s.engine);
    let ids: Vec<u64> = PROMPTS.iter().map(|p| engine.submit_text(p, &options()).unwrap()).collect();
    // Both iterate (step and poll) at once; steps take turns and each output goes to one thread.
    let streams: Vec<_> = (0..2)
        .map(|_| {
            let engine = engine.clone();
            thread::spawn(move || engine.outputs().collect::<pagoda::Result<Vec<Output>>>().unwrap())
        })
        .collect();
    let mut outputs: Vec<Output> = streams.into_iter().flat_map(|t| t.join().unwrap()).collect();
    // Each thread saw its outputs in queue order; merged, a request's pieces are in order again
    // when sorted by how much it had generated.
    outputs.sort_by_key(|o| (o.request_id, o.n_generated));
    let texts = texts(&outputs);
    for (id, want) in ids.iter().zip(&expected) {
        assert_eq!(&texts[id], want);
    }
}

#[test]
fn a_model_and_a_tokenizer_serve_several_threads() {
    let model = Arc::new(Model::open(common::model_path()).unwrap());
    let tokenizer = Arc::new(Tokenizer::from_model(&model).unwrap());
    let expected_ids = tokenizer.encode(PROMPTS[0], TOKENIZE_ADD_SPECIAL).unwrap();
    // Each thread builds its own mesh, cache and engine on the shared model and generates.
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (model, tokenizer, expected_ids) = (model.clone(), tokenizer.clone(), expected_ids.clone());
            thread::spawn(move || {
                for _ in 0..20 {
                    assert_eq!(tokenizer.encode(PROMPTS[0], TOKENIZE_ADD_SPECIAL).unwrap(), expected_ids);
                }
                assert_eq!(model.info().unwrap().architecture, "llama");
                let mesh = Mesh::new(&MeshOptions::default()).unwrap();
                let cache_options = KvCacheOptions { num_blocks: 64, ..KvCacheOptions::default() };
                let cache = KvCache::new(&model, &mesh, None, &cache_options).unwrap();
                let engine = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default()).unwrap();
                engine.submit_tokens(&expected_ids, &options()).unwrap();
                engine.outputs().map(|o| o.unwrap().text).collect::<String>()
            })
        })
        .collect();
    let texts: Vec<String> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(!texts[0].is_empty());
    assert_eq!(texts[0], texts[1]);
}
