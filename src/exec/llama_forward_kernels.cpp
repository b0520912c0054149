// LlamaForward's kernel choices (runtime/kernel_choices.hpp): pinning the table's variants on
// this device's products, and measuring the ones it lacks (kernel_tuner.hpp).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "exec/kernel_tuner.hpp"
#include "exec/llama_forward_state.hpp"
#include "formats/names.hpp"

namespace pagoda::exec {

namespace {

std::string joined(const std::vector<std::string> &names) {
    std::string out;
    for (const std::string &n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

// The descriptor an entry stands for, at its bucket's rows (no pointers: supports() reads none).
pagoda_op_matmul_t entry_args(const runtime::MatmulShape &s, int32_t variant) {
    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    a.flags = s.flags;
    a.x_dtype = s.x_dtype;
    a.w_dtype = s.w_dtype;
    a.y_dtype = s.y_dtype;
    a.m = s.m_bucket;
    a.n = s.n;
    a.k = s.k;
    a.variant = variant;
    return a;
}

}  // namespace

void LlamaForward::set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices) {
    State &s = *state_;
    const runtime::Device &device = s.stream.device();
    const std::string kind = runtime::KernelChoices::device_kind(device);
    const std::vector<std::string> variants = device.kernel_variants(PAGODA_OP_MATMUL);
    std::map<runtime::MatmulShape, int32_t> pinned;
    if (choices) {
        const pagoda_backend_iface_t &f = device.iface();
        for (const auto &[shape, choice] : choices->entries()) {
            if (shape.device != kind || choice.variant == runtime::KernelChoices::kRules) continue;
            const auto it = std::find(variants.begin(), variants.end(), choice.variant);
            const std::string what = "kernel choices: the entry for " + shape.device + ", " +
                                     std::to_string(shape.n) + " x " + std::to_string(shape.k) +
                                     " " + formats::dtype_name(shape.w_dtype) + " weights at " +
                                     std::to_string(shape.m_bucket) + " rows";
            if (it == variants.end())
                throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                            what + " names variant '" + choice.variant + "', which " + device.name() +
                                " does not have (its matmul variants: " + joined(variants) + ")");
            const pagoda_op_matmul_t a = entry_args(shape, int32_t(it - variants.begin()) + 1);
            if (f.kernels->supports(f.self, device.index(), PAGODA_OP_MATMUL, &a) != PAGODA_OK)
                throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                            what + " names variant '" + choice.variant + "', which " + device.name() +
                                " refuses for that shape: " + last_error());
            runtime::MatmulShape key = shape;
            key.device.clear();
            pinned[key] = a.variant;
        }
    }
    // Graphs recorded so far baked in the old choices.
    s.decode_graphs.drop_graphs();
    s.pinned_variants = std::move(pinned);
}

void LlamaForward::tune_kernels(runtime::KernelChoices &choices, int64_t max_rows) {
    State &s = *state_;
    const runtime::Device &device = s.stream.device();
    const std::vector<std::string> variants = device.kernel_variants(PAGODA_OP_MATMUL);
    if (variants.empty()) return;
    const std::string kind = runtime::KernelChoices::device_kind(device);
    const model::ModelConfig &c = s.model->config();
    // As run_stage: half activations only in whole-model runs.
    const pagoda_dtype_t act = s.shard.first_stage() && s.shard.last_stage(c) ? s.activation_dtype
                                                                              : PAGODA_DTYPE_F32;
    struct Product {
        const DeviceTensor *w, *bias;
        pagoda_dtype_t y_dtype;
    };
    const DeviceTensor none;
    std::vector<Product> products;
    for (int64_t i = s.shard.first_layer; i < s.shard.end(c); ++i) {
        const LlamaLayerWeights &l = s.weights.layers()[size_t(i)];
        for (const auto &[w, bias] : {std::pair{&l.q, &l.q_bias}, {&l.k, &l.k_bias}, {&l.v, &l.v_bias},
                                      {&l.o, &none}, {&l.gate, &none}, {&l.up, &none}, {&l.down, &none}})
            if (*w) products.push_back({w, bias, act});  // (a mixture of experts has no dense MLP)
        if (l.router) products.push_back({&l.router, &none, PAGODA_DTYPE_F32});
    }
    if (s.weights.lm_head()) products.push_back({&s.weights.lm_head(), &none, PAGODA_DTYPE_F32});

    const int64_t last = runtime::KernelChoices::bucket(std::max<int64_t>(1, max_rows));
    for (int64_t m = 1; m <= last; m *= 2)
        for (const Product &p : products) {
            const pagoda_op_matmul_t a = s.matmul_args(*p.w, *p.bias, m, act, p.y_dtype);
            const runtime::MatmulShape shape = runtime::KernelChoices::shape_of(kind, a);
            if (choices.find(shape) == nullptr) choices.set(shape, measure_matmul(s.stream, a, variants));
        }
}

}  // namespace pagoda::exec
