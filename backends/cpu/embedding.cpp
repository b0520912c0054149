// PAGODA_OP_EMBEDDING: out[i, :] = table[ids[i], :] as f32.
#include "check_helpers.hpp"
#include "kernels.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {
constexpr const char *kOp = "embedding";
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
    const int64_t ldo = plugin::packed_or(a.ldo, a.dim);
    const int64_t row_bytes = a.dim * (a.table_dtype == PAGODA_DTYPE_F32 ? 4 : 2);
    const auto *table = static_cast<const char *>(a.table);
    auto *out = static_cast<float *>(a.out);
    cpu.pool().parallel_for(a.n_tokens, rows_per_chunk(a.dim), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            widen_to_f32(cpu.features(), table + a.ids[i] * row_bytes, a.table_dtype, a.dim,
                         out + i * ldo);
    });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
