//! Embedding requests through the binding: a text's vector has the model's hidden size and unit
//! L2 norm by default, mean and last pooling differ, an unnormalized vector keeps the direction,
//! the polled output carries the vector, and what an embedding cannot take is refused naming
//! the field.

mod common;

use pagoda::{
    Constraint, Embedding, EmbeddingNormalize, FinishReason, Output, Pooling, RequestOptions, Status,
    Tokenizer, TOKENIZE_ADD_SPECIAL,
};

const PROMPT: &str = "Once upon a time";

fn l2(v: &[f32]) -> f64 {
    v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt()
}

fn embedding(pooling: Pooling, normalize: EmbeddingNormalize) -> Embedding {
    Embedding { pooling, normalize }
}

#[test]
fn a_text_gives_a_unit_vector_of_the_hidden_size() {
    let mut s = common::stack();
    let hidden = s.model.info().unwrap().hidden_size;
    let v = s.engine.embed_text(PROMPT, &Embedding::default()).unwrap();
    assert_eq!(v.len() as i64, hidden);
    assert!((l2(&v) - 1.0).abs() < 1e-4, "norm {}", l2(&v));
    // The model's pooling is the last token's.
    let last = s.engine.embed_text(PROMPT, &embedding(Pooling::Last, EmbeddingNormalize::L2)).unwrap();
    assert_eq!(last, v);
    let ids = Tokenizer::from_model(&s.model).unwrap().encode(PROMPT, TOKENIZE_ADD_SPECIAL).unwrap();
    assert_eq!(s.engine.embed_tokens(&ids, &Embedding::default()).unwrap(), v);
}

#[test]
fn mean_and_last_pooling_differ() {
    let mut s = common::stack();
    let last = s.engine.embed_text(PROMPT, &embedding(Pooling::Last, EmbeddingNormalize::Model)).unwrap();
    let mean = s.engine.embed_text(PROMPT, &embedding(Pooling::Mean, EmbeddingNormalize::Model)).unwrap();
    assert_eq!(mean.len(), last.len());
    assert!((l2(&mean) - 1.0).abs() < 1e-4, "norm {}", l2(&mean));
    let largest = mean.iter().zip(&last).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(largest > 1e-3, "mean and last pooling agree to {largest}");
}

#[test]
fn unnormalized_keeps_the_direction() {
    let mut s = common::stack();
    for pooling in [Pooling::Last, Pooling::Mean] {
        let unit = s.engine.embed_text(PROMPT, &embedding(pooling, EmbeddingNormalize::L2)).unwrap();
        let raw = s.engine.embed_text(PROMPT, &embedding(pooling, EmbeddingNormalize::Off)).unwrap();
        let norm = l2(&raw);
        assert!((norm - 1.0).abs() > 1e-3, "{pooling:?}: the unnormalized norm is {norm}");
        for (i, (&r, &u)) in raw.iter().zip(&unit).enumerate() {
            assert!(
                (f64::from(r) / norm - f64::from(u)).abs() < 1e-4,
                "{pooling:?} [{i}]: {r} / {norm} vs {u}"
            );
        }
    }
}

#[test]
fn the_polled_output_carries_the_vector() {
    let mut s = common::stack();
    let options = RequestOptions {
        embedding: Some(embedding(Pooling::Mean, EmbeddingNormalize::Model)),
        ..RequestOptions::default()
    };
    let id = s.engine.submit_text(PROMPT, &options).unwrap();
    let outputs = s.engine.outputs().collect::<pagoda::Result<Vec<Output>>>().unwrap();
    assert_eq!(outputs.len(), 1);
    let o = &outputs[0];
    assert_eq!(
        (o.request_id, o.finish_reason, o.request_finished),
        (id, Some(FinishReason::StopToken), true)
    );
    assert!(o.token_ids.is_empty() && o.text.is_empty());
    let want = s.engine.embed_text(PROMPT, &embedding(Pooling::Mean, EmbeddingNormalize::Model)).unwrap();
    assert_eq!(o.embedding.as_ref(), Some(&want));
    // A generating request's outputs carry none.
    s.engine.submit_text(PROMPT, &RequestOptions { max_tokens: 3, ..RequestOptions::default() }).unwrap();
    for o in s.engine.outputs() {
        assert_eq!(o.unwrap().embedding, None);
    }
}

/// Whether `message` names `field` as a word ("n" alone, not a letter of another word).
fn names(message: &str, field: &str) -> bool {
    message.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == field)
}

#[test]
fn what_an_embedding_cannot_take_is_refused_by_name() {
    let mut s = common::stack();
    let embed = RequestOptions { embedding: Some(Embedding::default()), ..RequestOptions::default() };
    let refused = [
        ("n", RequestOptions { n: 2, ..embed.clone() }),
        (
            "constraint_kind",
            RequestOptions { constraint: Some(Constraint::Regex("[a-z]+".into())), ..embed.clone() },
        ),
        ("stop_strings", RequestOptions { stop_strings: vec![".".into()], ..embed.clone() }),
    ];
    for (field, options) in &refused {
        let err = s.engine.submit_text(PROMPT, options).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{field}: {err}");
        assert!(names(err.message(), field), "{field}: {}", err.message());
    }
    assert!(!s.engine.has_work().unwrap());
    // embed_text refuses while another request is live, whose outputs it would take.
    s.engine.submit_text(PROMPT, &RequestOptions { max_tokens: 3, ..RequestOptions::default() }).unwrap();
    let err = s.engine.embed_text(PROMPT, &Embedding::default()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    for o in s.engine.outputs() {
        o.unwrap();
    }
    assert!(s.engine.embed_text(PROMPT, &Embedding::default()).is_ok());
}
