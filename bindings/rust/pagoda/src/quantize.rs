//! Quantizing a GGUF model (`pagoda quantize`): its weight matrices rewritten in one of GGUF's
//! quantized block types, with llama.cpp's recipes of the same names.

use crate::convert::{Defaults, Filled};
use crate::cstr::{from_array, path_to_c};
use crate::error::{check, Result};
use crate::sys;
use std::path::Path;

/// `pagoda_quant_type_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantType {
    Q8_0,
    Q4_0,
    Q4KM,
    Q5KM,
    Q6K,
}

impl QuantType {
    fn to_c(self) -> sys::pagoda_quant_type_t {
        match self {
            QuantType::Q8_0 => sys::PAGODA_QUANT_Q8_0,
            QuantType::Q4_0 => sys::PAGODA_QUANT_Q4_0,
            QuantType::Q4KM => sys::PAGODA_QUANT_Q4_K_M,
            QuantType::Q5KM => sys::PAGODA_QUANT_Q5_K_M,
            QuantType::Q6K => sys::PAGODA_QUANT_Q6_K,
        }
    }
}

/// What one tensor type received (`pagoda_quantized_type_stats_t`).
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedType {
    /// ggml's type id.
    pub ggml_type: i32,
    /// `"Q4_K"`.
    pub name: String,
    pub tensors: i64,
    pub values: u64,
    /// Root mean squared error of the values as written.
    pub rmse: f64,
    /// `rmse` over the source values' root mean square.
    pub relative_rmse: f64,
}

/// `pagoda_quantize_stats_t`.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizeStats {
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub tensors_kept: i64,
    pub types: Vec<QuantizedType>,
}

/// Writes `output`, the GGUF model at `input` (F32, F16 or BF16 weights) with its weight
/// matrices quantized as `quant` says, on `threads` threads (0: one per core). The file appears
/// whole or not at all.
pub fn quantize(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    quant: QuantType,
    threads: i32,
) -> Result<QuantizeStats> {
    let input = path_to_c("input", input.as_ref())?;
    let output = path_to_c("output", output.as_ref())?;
    let mut options = sys::pagoda_quantize_options_t::defaults();
    options.r#type = quant.to_c();
    options.threads = threads;
    let mut stats = sys::pagoda_quantize_stats_t::sized();
    // SAFETY: NUL-terminated paths, options and stats structs that outlive the call.
    check(unsafe { sys::pagoda_model_quantize(input.as_ptr(), output.as_ptr(), &options, &mut stats) })?;
    let n = (stats.n_types.max(0) as usize).min(stats.types.len());
    Ok(QuantizeStats {
        input_bytes: stats.input_bytes,
        output_bytes: stats.output_bytes,
        tensors_kept: stats.tensors_kept,
        types: stats.types[..n]
            .iter()
            .map(|t| QuantizedType {
                ggml_type: t.ggml_type,
                name: from_array(&t.name),
                tensors: t.tensors,
                values: t.values,
                rmse: t.rmse,
                relative_rmse: t.relative_rmse,
            })
            .collect(),
    })
}
