// How a LlamaForward step hands over its logits: copied to the host, or picked on the device
// (PAGODA_OP_SAMPLE) so that only the tokens and their log-probabilities come back.
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "exec/llama_forward_state.hpp"
#include "formats/names.hpp"

namespace pagoda::exec {

bool LlamaForward::can_sample_on_device() const {
    State &s = *state_;
    if (s.can_sample < 0) {
        pagoda_op_sample_t a{};
        a.struct_size = sizeof a;
        a.rows = 1;
        a.cols = s.model->config().vocab_size;
        const runtime::Device &d = s.stream.device();
        const pagoda_backend_iface_t &f = d.iface();
        s.can_sample = f.kernels->supports(f.self, d.index(), PAGODA_OP_SAMPLE, &a) == PAGODA_OK;
        clear_last_error();
    }
    return s.can_sample == 1;
}

bool LlamaForward::run_sampled(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                               const std::vector<kv::LayerPools> &pools,
                               const DeviceSampling &sampling, int32_t *tokens,
                               float *logprobs) {
    State &s = *state_;
    State::DevicePick pick;
    pick.sampling = &sampling;
    pick.tokens = tokens;
    pick.logprobs = logprobs;
    s.pick = &pick;
    try {
        run(batch, geometry, pools, nullptr);
    } catch (...) {
        s.pick = nullptr;
        throw;
    }
    s.pick = nullptr;
    return !pick.refused;
}

void LlamaForward::copy_logits(float *logits) {
    State &s = *state_;
    if (s.last_logit_rows == 0) return;
    s.stream.copy(logits, s.logits.get(),
                  s.last_logit_rows * size_t(s.model->config().vocab_size) * sizeof(float),
                  PAGODA_COPY_DEVICE_TO_HOST);
    s.stream.synchronize();
}

void LlamaForward::State::deliver(size_t rows, float *host_logits) {
    last_logit_rows = rows;
    if (pick == nullptr) {
        if (rows > 0)
            stream.copy(host_logits, logits.get(),
                        rows * size_t(model->config().vocab_size) * sizeof(float),
                        PAGODA_COPY_DEVICE_TO_HOST);
        stream.synchronize();
        return;
    }
    // The forward's own failures surface here, before the sampler runs, so that a failure of
    // the sampler alone is told apart (and the logits it refused stay usable). The extra wait
    // costs the device one launch's gap.
    stream.synchronize();
    sample_on_device(rows);
}

void LlamaForward::State::sample_on_device(size_t rows) {
    const DeviceSampling &in = *pick->sampling;
    if (in.size() != rows || in.top_k.size() != rows || in.top_p.size() != rows ||
        in.min_p.size() != rows || in.uniform.size() != rows)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "device sampling: parameters for " + std::to_string(in.size()) + " rows, the step has " +
                        std::to_string(rows) + " logit rows");
    if (rows == 0) return;
    const runtime::Device &d = stream.device();
    auto upload = [&](ScratchBuffer &dst, const auto &src) {
        const size_t bytes = src.size() * sizeof(src[0]);
        void *p = dst.reserve(d, bytes);
        stream.copy(p, src.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
        return p;
    };
    pagoda_op_sample_t a{};
    a.struct_size = sizeof a;
    a.rows = int64_t(rows);
    a.cols = model->config().vocab_size;
    a.logits = logits.get();
    a.temperature = static_cast<const float *>(upload(pick_temperature, in.temperature));
    a.top_k = static_cast<const int32_t *>(upload(pick_top_k, in.top_k));
    a.top_p = static_cast<const float *>(upload(pick_top_p, in.top_p));
    a.min_p = static_cast<const float *>(upload(pick_min_p, in.min_p));
    a.uniform = static_cast<const float *>(upload(pick_uniform, in.uniform));
    a.out = static_cast<int32_t *>(pick_tokens.reserve(d, rows * sizeof(int32_t)));
    a.logprobs = static_cast<float *>(pick_logprobs.reserve(d, rows * sizeof(float)));
    try {
        stream.launch(PAGODA_OP_SAMPLE, &a);
        stream.copy(pick->tokens, a.out, rows * sizeof(int32_t), PAGODA_COPY_DEVICE_TO_HOST);
        stream.copy(pick->logprobs, a.logprobs, rows * sizeof(float), PAGODA_COPY_DEVICE_TO_HOST);
        stream.synchronize();
    } catch (const Error &e) {
        // A row the device will not sample from (NaN, all -inf): the host sampler reports it
        // for the request it belongs to.
        pick->refused = true;
        pagoda::log(PAGODA_LOG_DEBUG, std::string("device sampling refused the step: ") + e.what());
    }
}

}  // namespace pagoda::exec
