// quantize.h: a GGUF file or a Hugging Face folder written as a GGUF file with quantized weight matrices.
#include <cmath>
#include <cstring>
#include <string>

#include "capi/enum_arg.hpp"
#include "capi/guard.hpp"
#include "capi/progress.hpp"
#include "capi/sized_struct.hpp"
#include "engine/model_quantize.hpp"
#include "model/gguf_file.hpp"
#include "pagoda/quantize.h"

using pagoda::fail;
using pagoda::guarded;
using pagoda::model::QuantMix;

namespace {

pagoda_quantize_options_t default_quantize_options() {
    pagoda_quantize_options_t o{};
    o.struct_size = sizeof(o);
    o.type = PAGODA_QUANT_Q4_K_M;
    return o;
}

QuantMix mix_of(int type) {
    switch (type) {
    case PAGODA_QUANT_Q8_0: return QuantMix::Q8_0;
    case PAGODA_QUANT_Q4_0: return QuantMix::Q4_0;
    case PAGODA_QUANT_Q4_K_M: return QuantMix::Q4_K_M;
    case PAGODA_QUANT_Q5_K_M: return QuantMix::Q5_K_M;
    case PAGODA_QUANT_Q6_K: return QuantMix::Q6_K;
    default:
        fail(PAGODA_ERR_INVALID_ARGUMENT, "options->type is " + std::to_string(type) +
                                              ", not a pagoda_quant_type_t (Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K)");
    }
}

pagoda_quantize_stats_t public_stats(const pagoda::model::QuantizeSummary &s) {
    pagoda_quantize_stats_t p{};
    p.struct_size = sizeof(p);
    p.input_bytes = s.input_bytes;
    p.output_bytes = s.output_bytes;
    p.tensors_kept = s.tensors_kept;
    for (const pagoda::model::QuantizedTypeStats &t : s.types) {
        if (p.n_types == PAGODA_QUANTIZE_MAX_TYPES) break;
        pagoda_quantized_type_stats_t &o = p.types[p.n_types++];
        o.ggml_type = int32_t(pagoda::model::ggml_type_id(t.type));
        std::strncpy(o.name, pagoda::model::tensor_type_name(t.type), sizeof o.name - 1);
        o.tensors = t.tensors;
        o.values = t.values;
        o.rmse = t.values > 0 ? std::sqrt(t.squared_error / double(t.values)) : 0.0;
        o.relative_rmse = t.squared_values > 0 ? std::sqrt(t.squared_error / t.squared_values) : 0.0;
    }
    return p;
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_quantize_options_init(pagoda_quantize_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_quantize_options());
}

PAGODA_API pagoda_status_t pagoda_model_quantize(const char *input_path, const char *output_path,
                                                 const pagoda_quantize_options_t *options,
                                                 pagoda_quantize_stats_t *stats) {
    return guarded("pagoda_model_quantize", [&] {
        if (input_path == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "input_path is NULL");
        if (output_path == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "output_path is NULL");
        if (stats != nullptr && stats->struct_size < 2 * sizeof(uint32_t))
            fail(PAGODA_ERR_INVALID_ARGUMENT, "stats->struct_size is not set: set it to sizeof(pagoda_quantize_stats_t)");
        const pagoda_quantize_options_t o =
            pagoda::read_sized(options, default_quantize_options(), "options");
        const QuantMix mix = mix_of(pagoda::enum_arg(o.type));
        if (o.threads < 0)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->threads is " + std::to_string(o.threads) +
                                                  ": 0 for one per core, or a positive count");
        const pagoda::model::QuantizeSummary summary = pagoda::engine::quantize_model(
            input_path, output_path, mix, o.threads, pagoda::progress_of(o.progress, o.progress_user));
        if (stats != nullptr) pagoda::write_sized(stats, public_stats(summary), "stats");
        return PAGODA_OK;
    });
}

}  // extern "C"
