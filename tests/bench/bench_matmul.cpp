// Matrix products through the backend's PAGODA_OP_MATMUL: the SGEMM ceiling (a large f32
// product, which the CPU backend hands to OpenBLAS), decode GEMVs (small m, bound by streaming
// W) and prefill products (m = 128, 512, bound by arithmetic). On a GPU, Llama-3-8B's
// projections at decode and prefill sizes, each next to plain cuBLAS on the same shape
// (bench_cublas.cpp): the figure is cuBLAS's time over ours, 1 = as fast.
#include <algorithm>
#include <string>
#include <vector>

#include "bench_common.hpp"
#ifdef PAGODA_BENCH_WITH_CUBLAS
#include "bench_cublas.hpp"
#endif

namespace pagoda::bench {

namespace {

struct Shape {
    int64_t n, k;  // W is [n, k]
};

// Llama-2-7B's projections: attention (4096×4096), FFN up/gate (11008×4096) and down
// (4096×11008).
const std::vector<Shape> kShapes = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
// Llama-3.2-1B's (the peer benchmark's 1B shape): q and o (2048×2048), k and v (512×2048),
// gate/up (8192×2048), down (2048×8192) and the tied LM head (128256×2048).
const std::vector<Shape> kSmallModelShapes = {
    {2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};
const std::vector<Shape> kQuickShapes = {{1024, 1024}};

// One matmul measurement; `rotate` cycles W among copies larger than the LLC together.
void run_case(Bench &bench, const char *name, int64_t m, Shape s, pagoda_dtype_t w_dtype,
              bool rotate, uint32_t flags = 0, int32_t variant = 0) {
    pagoda_op_matmul_t op{};
    op.struct_size = sizeof op;
    op.flags = flags;
    op.variant = variant;
    op.x_dtype = op.y_dtype = PAGODA_DTYPE_F32;
    op.w_dtype = w_dtype;
    op.m = m;
    op.n = s.n;
    op.k = s.k;

    JsonLine line = JsonLine::start(bench, name);
    line.add("m", m).add("n", s.n).add("k", s.k).add("w_dtype", dtype_name(w_dtype));
    if (variant != 0) line.add("variant", variant);
    std::string why;
    if (bench.supports(PAGODA_OP_MATMUL, &op, why) != PAGODA_OK) {
        print_skipped(line, why);
        return;
    }

    const size_t w_bytes = size_t(s.n) * row_bytes(w_dtype, s.k);
    const size_t x_bytes = size_t(m * s.k) * sizeof(float), y_bytes = size_t(m * s.n) * sizeof(float);
    const int copies = rotate ? rotation_copies(bench.options(), w_bytes) : 1;
    const std::vector<void *> w = rotated_buffers(bench, w_bytes, w_dtype, copies);
    void *x = bench.alloc(x_bytes), *y = bench.alloc(y_bytes);
    bench.fill_random(x, x_bytes, PAGODA_DTYPE_F32);
    bench.synchronize();

    op.x = x;
    op.y = y;
    const double bytes = double(w_bytes + x_bytes + y_bytes);
    // Decode GEMVs are judged by bandwidth, so they are timed side by side with the probe.
    Timing t = measure(
        bench,
        [&](int64_t i) {
            op.w = w[size_t(i % copies)];
            bench.launch(PAGODA_OP_MATMUL, &op);
        },
        0, rotate ? bytes : 0.0);
    line.add("weight_copies", copies);
    add_rates(line, bench, t, bytes, 2.0 * double(m * s.n * s.k));
    for (void *p : w) bench.release(p);
    bench.release(x);
    bench.release(y);
#ifdef PAGODA_BENCH_WITH_CUBLAS
    if (!bench.host_memory() && pagoda_dtype_size(w_dtype) == 0) {
        // cuBLAS has no GGUF block types: a decode of them is judged by the bytes it streams.
        if (bench.bandwidth > 0)
            add_goal(line, "fraction_of_copy_bandwidth", bytes / t.best_seconds / bench.bandwidth,
                     0.85);
    } else if (!bench.host_memory()) {
        const double cublas = cublas_matmul_seconds(bench, m, s.n, s.k, w_dtype);
        line.add("cublas_best_seconds", cublas);
        add_goal(line, "cublas_time_over_ours", cublas / t.best_seconds, 1.0);
    }
#endif
    line.print();
}

// Llama-3-8B's projections: q/k/v fused (6144×4096), o (4096×4096), gate/up fused
// (28672×4096), down (4096×14336) and the LM head (128256×4096).
const std::vector<Shape> kDeviceShapes = {
    {6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {128256, 4096}};

// The GPU's list: decode sizes (where our own GEMV may beat cuBLAS) and prefill sizes, for the
// plain types and GGUF's block types (decoded in the kernels).
void device_matmuls(Bench &bench) {
    const Options &o = bench.options();
    const std::vector<Shape> &shapes = o.quick ? kQuickShapes : kDeviceShapes;
    if (wanted(o, "gemv")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 4, 16};
        for (pagoda_dtype_t d : {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16, PAGODA_DTYPE_F32,
                                 PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_0, PAGODA_DTYPE_Q4_K,
                                 PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K})
            for (const Shape &s : shapes)
                for (int64_t m : ms) run_case(bench, "gemv", m, s, d, true);
    }
    if (wanted(o, "matmul")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{256} : std::vector<int64_t>{512, 4096};
        for (pagoda_dtype_t d : {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F32, PAGODA_DTYPE_Q8_0,
                                 PAGODA_DTYPE_Q4_K})
            for (const Shape &s : shapes)
                for (int64_t m : ms) run_case(bench, "matmul", m, s, d, false);
    }
}

}  // namespace

void bench_matmul(Bench &bench) {
    const Options &o = bench.options();
    if (!bench.host_memory()) {
        device_matmuls(bench);
        return;
    }
    const std::vector<Shape> &shapes =
        o.quick ? kQuickShapes : o.shapes == "llama1b" ? kSmallModelShapes : kShapes;

    if (wanted(o, "sgemm")) {
        // The arithmetic ceiling: square, large, f32. The CPU backend sends m > 64 to OpenBLAS
        // (single-threaded sgemm on its own pool's threads).
        const int64_t size = o.quick ? 256 : 2048;
        run_case(bench, "sgemm_ceiling", size, Shape{size, size}, PAGODA_DTYPE_F32, false);
    }
    // The plain weight types, then GGUF's block types (decoded in the kernels).
    const pagoda_dtype_t gemv_types[] = {PAGODA_DTYPE_F32,  PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16,
                                         PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_0, PAGODA_DTYPE_Q4_K,
                                         PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K};
    // m = 1-4 and 8, around where the int8 route hands over to the float one (gemv_q8x.hpp),
    // and 16 (batched decode).
    if (wanted(o, "gemv")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{1, 4}
                                                : std::vector<int64_t>{1, 2, 3, 4, 8, 16};
        for (pagoda_dtype_t d : gemv_types)
            for (const Shape &s : shapes)
                for (int64_t m : ms) run_case(bench, "gemv", m, s, d, true);
    }
    // The block types again on activations rounded to 8 bits (PAGODA_MATMUL_QUANTIZE_X).
    if (wanted(o, "gemv_q8x")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{1, 4}
                                                : std::vector<int64_t>{1, 2, 3, 4, 8, 16};
        for (pagoda_dtype_t d : gemv_types) {
            if (pagoda_dtype_size(d) != 0) continue;  // a plain type (a block type has no size)
            for (const Shape &s : shapes) {
                for (int64_t m : ms)
                    run_case(bench, "gemv_q8x", m, s, d, true, PAGODA_MATMUL_QUANTIZE_X);
                // Q8_0 at prefill sizes on the same route (variant 2), against "matmul"'s sgemm.
                if (!o.quick && d == PAGODA_DTYPE_Q8_0)
                    for (int64_t m : {64, 512})
                        run_case(bench, "gemv_q8x", m, s, d, false, PAGODA_MATMUL_QUANTIZE_X, 2);
            }
        }
    }
    // The K types on activations rounded per block of 256 (with PAGODA_MATMUL_QUANTIZE_X_BLOCK).
    if (wanted(o, "gemv_q8k")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{1, 4}
                                                : std::vector<int64_t>{1, 2, 4, 8, 16};
        const uint32_t flags = PAGODA_MATMUL_QUANTIZE_X | PAGODA_MATMUL_QUANTIZE_X_BLOCK;
        for (pagoda_dtype_t d : {PAGODA_DTYPE_Q4_K, PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K})
            for (const Shape &s : shapes) {
                for (int64_t m : ms) run_case(bench, "gemv_q8k", m, s, d, true, flags);
                // Prefill sizes on the same route (the CPU backend's variant 2, gemv_int8),
                // against the "matmul" benchmark's sgemm at the same m.
                if (!o.quick)
                    for (int64_t m : {64, 512}) run_case(bench, "gemv_q8k", m, s, d, false, flags, 2);
            }
    }
    if (wanted(o, "matmul")) {
        const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{32}
                                                : std::vector<int64_t>{128, 512};
        for (pagoda_dtype_t d :
             {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_K})
            for (const Shape &s : shapes)
                for (int64_t m : ms) run_case(bench, "matmul", m, s, d, false);
    }
}

}  // namespace pagoda::bench
