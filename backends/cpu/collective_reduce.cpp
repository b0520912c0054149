#include "collective_reduce.hpp"

#include <cstdint>

#include "half.hpp"

namespace pagoda::cpu {

namespace {

template <typename T>
T combine(T a, T b, pagoda_reduce_op_t op) {
    switch (op) {
        case PAGODA_REDUCE_MAX: return a > b ? a : b;
        case PAGODA_REDUCE_MIN: return a < b ? a : b;
        default: return a + b;
    }
}

template <typename T>
void reduce_range(std::span<const void *const> sends, size_t offset, size_t count, pagoda_reduce_op_t op,
                  void *dst) {
    for (size_t i = 0; i < count; ++i) {
        T acc = static_cast<const T *>(sends[0])[offset + i];
        for (size_t r = 1; r < sends.size(); ++r) acc = combine(acc, static_cast<const T *>(sends[r])[offset + i], op);
        static_cast<T *>(dst)[i] = acc;
    }
}

void reduce_half_range(std::span<const void *const> sends, pagoda_dtype_t t, size_t offset, size_t count,
                       pagoda_reduce_op_t op, void *dst) {
    for (size_t i = 0; i < count; ++i) {
        float acc = load_weight(sends[0], t, int64_t(offset + i));
        for (size_t r = 1; r < sends.size(); ++r) acc = combine(acc, load_weight(sends[r], t, int64_t(offset + i)), op);
        store_value(dst, t, int64_t(i), acc);
    }
}

}  // namespace

bool reducible(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_F32 || t == PAGODA_DTYPE_F16 || t == PAGODA_DTYPE_BF16 || t == PAGODA_DTYPE_I32 ||
           t == PAGODA_DTYPE_I64;
}

void reduce_into(std::span<const void *const> sends, pagoda_dtype_t t, size_t offset, size_t count,
                 pagoda_reduce_op_t op, void *dst) {
    switch (t) {
        case PAGODA_DTYPE_F32: reduce_range<float>(sends, offset, count, op, dst); break;
        case PAGODA_DTYPE_I32: reduce_range<int32_t>(sends, offset, count, op, dst); break;
        case PAGODA_DTYPE_I64: reduce_range<int64_t>(sends, offset, count, op, dst); break;
        default: reduce_half_range(sends, t, offset, count, op, dst); break;
    }
}

}  // namespace pagoda::cpu
