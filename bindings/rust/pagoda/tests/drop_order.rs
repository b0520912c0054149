//! Handles released in the "wrong" order: the library keeps what an engine needs alive, so
//! nothing here may crash (CTest runs this under ASan too).

mod common;

use pagoda::{
    Engine, EngineOptions, FinishReason, KvCache, KvCacheOptions, Mesh, MeshOptions, Model, RequestOptions,
    Status, Tokenizer,
};

fn generate(engine: &Engine) -> String {
    let options = RequestOptions { max_tokens: 16, ..RequestOptions::greedy() };
    engine.submit_text("Once upon a time", &options).unwrap();
    engine.outputs().map(|o| o.unwrap().text).collect()
}

#[test]
fn the_cache_goes_before_the_engine() {
    let s = common::stack();
    let before = generate(&s.engine);
    let common::Stack { model, mesh, cache, engine } = s;
    drop(cache);
    assert_eq!(generate(&engine), before, "the engine still has its cache");
    drop(engine);
    drop(mesh);
    drop(model);
}

#[test]
fn everything_goes_before_the_engine_even_mid_request() {
    let s = common::stack();
    let common::Stack { model, mesh, cache, engine } = s;
    let options = RequestOptions { max_tokens: 64, ignore_eos: true, ..RequestOptions::greedy() };
    engine.submit_text("Once upon a time", &options).unwrap();
    engine.step().unwrap();
    drop(model);
    drop(cache);
    drop(mesh);
    let outputs: Vec<_> = engine.outputs().map(|o| o.unwrap()).collect();
    assert_eq!(outputs.last().unwrap().finish_reason, Some(FinishReason::Length));
    assert_eq!(outputs.iter().map(|o| o.token_ids.len()).sum::<usize>(), 64);
}

#[test]
fn an_engine_dropped_with_requests_in_flight() {
    let s = common::stack();
    let options = RequestOptions { max_tokens: 64, ..RequestOptions::greedy() };
    s.engine.submit_text("Once upon a time", &options).unwrap();
    s.engine.step().unwrap();
    let common::Stack { model, mesh, cache, engine } = s;
    drop(engine);
    // Its blocks went back: the cache can serve a new engine.
    assert_eq!(cache.stats().unwrap().sequences, 0);
    let again = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default()).unwrap();
    assert!(!generate(&again).is_empty());
}

#[test]
fn a_cache_serves_one_engine_at_a_time() {
    let s = common::stack();
    let common::Stack { model, mesh, cache, engine } = s;
    let err = Engine::new(&model, &mesh, None, &cache, &EngineOptions::default()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    drop(engine);
}

#[test]
fn a_tokenizer_outlives_its_model() {
    let model = Model::open(common::model_path()).unwrap();
    let tokenizer = Tokenizer::from_model(&model).unwrap();
    drop(model);
    let ids = tokenizer.encode("Once upon a time", 0).unwrap();
    assert_eq!(tokenizer.decode(&ids, 0).unwrap(), "Once upon a time");
}

#[test]
fn a_cache_outlives_the_model_and_mesh_it_was_made_for() {
    let model = Model::open(common::model_path()).unwrap();
    let mesh = Mesh::new(&MeshOptions::default()).unwrap();
    let cache =
        KvCache::new(&model, &mesh, None, &KvCacheOptions { num_blocks: 32, ..KvCacheOptions::default() })
            .unwrap();
    drop(mesh);
    drop(model);
    assert_eq!(cache.stats().unwrap().blocks_total, 32);
}
