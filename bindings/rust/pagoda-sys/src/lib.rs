//! Raw declarations of libpagoda's public C API, written by hand from `include/pagoda/*.h`.
//!
//! Each module mirrors one header, with the header's names. Every struct is `#[repr(C)]` with the
//! header's fields in the header's order; `tests/layout.rs` compares their sizes and offsets with
//! what the C compiler lays out. C enums are plain `i32` aliases with constants, never Rust
//! enums: a value the library adds later must not be undefined behaviour here.
//!
//! Everything is `unsafe` to call; the `pagoda` crate is the safe wrapper.
#![allow(non_camel_case_types)]

pub mod backend;
pub mod common;
pub mod constraint;
pub mod dtype;
pub mod engine;
pub mod kernel_choice;
pub mod kv_cache;
pub mod log;
pub mod mesh;
pub mod model;
pub mod plan;
pub mod quantize;
pub mod status;
pub mod tokenizer;
pub mod version;

pub use backend::*;
pub use common::*;
pub use constraint::*;
pub use dtype::*;
pub use engine::*;
pub use kernel_choice::*;
pub use kv_cache::*;
pub use log::*;
pub use mesh::*;
pub use model::*;
pub use plan::*;
pub use quantize::*;
pub use status::*;
pub use tokenizer::*;
pub use version::*;
