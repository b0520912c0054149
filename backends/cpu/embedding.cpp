// PAGODA_OP_EMBEDDING: out[i, :] = scale · table[ids[i], :] converted to out_dtype (scale since
// ABI 1.8, 0 meaning 1). An f32 output is a widening (vectorised by widen_to_f32, which decodes
// block tables too) then the scaling; a block table's row to a half output is decoded a block at
// a time, scaled and rounded; an unscaled table already of the output's type is copied as it is;
// otherwise each element is widened, scaled and rounded once.
#include <cstring>

#include "block_formats.hpp"
#include "check_helpers.hpp"
#include "cpu_backend.hpp"
#include "half.hpp"
#include "kernels.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "embedding";

template <pagoda_dtype_t Out>
void convert_row(const void *src, pagoda_dtype_t src_dtype, int64_t n, float scale, void *dst) {
    for (int64_t i = 0; i < n; ++i)
        store_from_f32<Out>(dst, i, load_weight(src, src_dtype, i) * scale);
}

// Multiplying by 1 changes no value, so unscaled rows skip the pass.
void scale_f32(float *v, int64_t n, float scale) {
    if (scale == 1.0f) return;
    for (int64_t i = 0; i < n; ++i) v[i] *= scale;
}

// A row of a block table to a half output: each block decoded to f32 on the stack, scaled, then
// rounded.
void narrow_blocks(const CpuFeatures &features, const char *row, pagoda_dtype_t table_dtype,
                   int64_t dim, float scale, pagoda_dtype_t out_dtype, char *dst) {
    const formats::BlockShape b = formats::block_shape(table_dtype);
    float values[256];  // the largest block
    for (int64_t c = 0; c < dim; c += b.elements, row += b.bytes) {
        widen_to_f32(features, row, table_dtype, b.elements, values);
        scale_f32(values, b.elements, scale);
        narrow_from_f32(features, values, out_dtype, b.elements, dst + c * 2);
    }
}

}  // namespace

pagoda_status_t run_embedding(CpuBackend &cpu, const pagoda_op_embedding_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "table", a.table));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "ids", a.ids));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "out", a.out));
    // Every id is checked before anything is written, so a bad batch leaves `out` as it was.
    for (int64_t i = 0; i < a.n_tokens; ++i) {
        const int32_t id = a.ids[i];
        if (id < 0 || id >= a.vocab_size)
            return cpu.fail(
                PAGODA_ERR_INVALID_ARGUMENT,
                std::string(kOp) + ": ids[" + std::to_string(i) + "] = " + std::to_string(id) +
                    " is outside [0, vocab_size = " + std::to_string(a.vocab_size) + ")");
    }
    const pagoda_dtype_t out_dtype = plugin::act_dtype_of(a.out_dtype);
    const float scale = a.scale == 0.0f ? 1.0f : a.scale;  // ops.h: 0 means 1
    const int64_t ldo = plugin::packed_or(a.ldo, a.dim);
    const int64_t table_row = formats::row_bytes(a.table_dtype, a.dim);
    const auto out_elem = int64_t(formats::dtype_size(out_dtype));
    const auto *table = static_cast<const char *>(a.table);
    auto *out = static_cast<char *>(a.out);
    cpu.pool().parallel_for(a.n_tokens, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const char *row = table + a.ids[i] * table_row;
            char *dst = out + i * ldo * out_elem;
            if (out_dtype == PAGODA_DTYPE_F32) {
                auto *values = reinterpret_cast<float *>(dst);
                widen_to_f32(cpu.features(), row, a.table_dtype, a.dim, values);
                scale_f32(values, a.dim, scale);
            } else if (formats::is_block_dtype(a.table_dtype)) {
                narrow_blocks(cpu.features(), row, a.table_dtype, a.dim, scale, out_dtype, dst);
            } else if (out_dtype == a.table_dtype && scale == 1.0f) {
                std::memcpy(dst, row, size_t(a.dim * out_elem));
            } else if (out_dtype == PAGODA_DTYPE_BF16) {
                convert_row<PAGODA_DTYPE_BF16>(row, a.table_dtype, a.dim, scale, dst);
            } else {
                convert_row<PAGODA_DTYPE_F16>(row, a.table_dtype, a.dim, scale, dst);
            }
        }
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
