// A plain Llama-family forward pass in double precision, written independently of the backends:
// one token at a time, a contiguous K/V history per sequence, straightforward loops. It reads the
// weights as stored (F32/F16/BF16 values widened exactly, block-quantized ones decoded by the
// reference decoders) and rotates with the model's own RoPE layout, so it can check LlamaForward
// on either format.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "model/quant_blocks.hpp"
#include "model_test_support.hpp"

namespace pagoda::test {

class ReferenceModel {
public:
    // One sequence's history: per layer, the rotated keys and the values of every past position.
    struct Sequence {
        std::vector<std::vector<double>> k, v;  // [layer][position * kv_width + i]
        int32_t length = 0;
    };

    explicit ReferenceModel(const model::Model &m) : c_(m.config()) {
        for (const auto &[name, t] : m.tensors().all()) {
            uint64_t n = 1;
            for (int64_t d : t.shape) n *= uint64_t(d);
            std::vector<double> &w = weights_[name];
            w.resize(size_t(n));
            if (model::is_quantized(t.type)) {  // the reference decoding, as the kernels see it
                std::vector<float> decoded(static_cast<size_t>(n));
                model::dequantize(t.type, t.data, n, decoded.data());
                std::copy(decoded.begin(), decoded.end(), w.begin());
            } else {
                for (uint64_t i = 0; i < n; ++i) w[size_t(i)] = value(t, i);
            }
        }
        inv_freq_ = inverse_frequencies();
    }

    Sequence new_sequence() const {
        Sequence s;
        s.k.resize(size_t(c_.n_layers));
        s.v.resize(size_t(c_.n_layers));
        return s;
    }

    // Runs `token` at position s.length, appends its K/V to `s`, and returns its logits.
    std::vector<double> step(Sequence &s, int32_t token) const {
        const int64_t hidden = c_.hidden_size, hd = c_.head_dim;
        const int64_t q_width = c_.n_heads * hd, kv_width = c_.n_kv_heads * hd;
        const int32_t pos = s.length;
        const std::vector<double> &embed = w("model.embed_tokens.weight");
        std::vector<double> h(embed.begin() + token * hidden, embed.begin() + (token + 1) * hidden);

        for (int64_t layer = 0; layer < c_.n_layers; ++layer) {
            const std::string p = "model.layers." + std::to_string(layer) + ".";
            std::vector<double> x = rmsnorm(h, w(p + "input_layernorm.weight"));
            std::vector<double> q = linear(p + "self_attn.q_proj", x, q_width);
            std::vector<double> k = linear(p + "self_attn.k_proj", x, kv_width);
            std::vector<double> v = linear(p + "self_attn.v_proj", x, kv_width);
            if (c_.qk_norm) {
                head_norm(q, w(p + "self_attn.q_norm.weight"));
                head_norm(k, w(p + "self_attn.k_norm.weight"));
            }
            rope(q, c_.n_heads, pos);
            rope(k, c_.n_kv_heads, pos);
            std::vector<double> &kc = s.k[size_t(layer)], &vc = s.v[size_t(layer)];
            kc.insert(kc.end(), k.begin(), k.end());
            vc.insert(vc.end(), v.begin(), v.end());

            // Causal attention over positions [first, pos], GQA head sharing, optional window.
            const int64_t window = c_.window_of(layer);
            const int32_t first = window > 0 ? std::max<int32_t>(0, pos - int32_t(window) + 1) : 0;
            const int64_t group = c_.n_heads / c_.n_kv_heads;
            std::vector<double> attn(size_t(q_width), 0.0);
            for (int64_t head = 0; head < c_.n_heads; ++head) {
                const int64_t kvh = head / group;
                std::vector<double> scores;
                double top = -INFINITY;
                for (int32_t j = first; j <= pos; ++j) {
                    double dot = 0;
                    for (int64_t i = 0; i < hd; ++i)
                        dot += q[size_t(head * hd + i)] * kc[size_t(j * kv_width + kvh * hd + i)];
                    scores.push_back(dot / std::sqrt(double(hd)));
                    top = std::max(top, scores.back());
                }
                double sum = 0;
                for (double &sc : scores) sum += (sc = std::exp(sc - top));
                for (int32_t j = first; j <= pos; ++j)
                    for (int64_t i = 0; i < hd; ++i)
                        attn[size_t(head * hd + i)] += scores[size_t(j - first)] / sum *
                                                       vc[size_t(j * kv_width + kvh * hd + i)];
            }
            add(h, linear(p + "self_attn.o_proj", attn, hidden));

            x = rmsnorm(h, w(p + "post_attention_layernorm.weight"));
            std::vector<double> g = linear(p + "mlp.gate_proj", x, c_.intermediate_size);
            const std::vector<double> u = linear(p + "mlp.up_proj", x, c_.intermediate_size);
            for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            add(h, linear(p + "mlp.down_proj", g, hidden));
        }
        ++s.length;
        const std::vector<double> x = rmsnorm(h, w("model.norm.weight"));
        return matvec(w(c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"), x,
                      c_.vocab_size);
    }

private:
    static double value(const model::TensorRef &t, uint64_t i) {
        switch (t.type) {
        case model::TensorType::F32:
            return static_cast<const float *>(t.data)[i];
        case model::TensorType::F16:
            return f16_to_float(static_cast<const uint16_t *>(t.data)[i]);
        case model::TensorType::BF16:
            return bf16_to_float(static_cast<const uint16_t *>(t.data)[i]);
        default:
            fail_msg("%s: not a float tensor", t.name.c_str());
        }
        return 0;
    }

    const std::vector<double> &w(const std::string &name) const {
        auto it = weights_.find(name);
        if (it == weights_.end()) fail_msg("reference: no tensor %s", name.c_str());
        return it->second;
    }

    static std::vector<double> matvec(const std::vector<double> &m, const std::vector<double> &x,
                                      int64_t rows) {
        const size_t cols = x.size();
        std::vector<double> y(size_t(rows), 0.0);
        for (size_t r = 0; r < size_t(rows); ++r)
            for (size_t i = 0; i < cols; ++i) y[r] += m[r * cols + i] * x[i];
        return y;
    }

    std::vector<double> linear(const std::string &prefix, const std::vector<double> &x,
                               int64_t rows) const {
        std::vector<double> y = matvec(w(prefix + ".weight"), x, rows);
        if (c_.attention_bias && weights_.count(prefix + ".bias")) add(y, w(prefix + ".bias"));
        return y;
    }

    static void add(std::vector<double> &a, const std::vector<double> &b) {
        for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    }

    std::vector<double> rmsnorm(const std::vector<double> &x,
                                const std::vector<double> &weight) const {
        double ss = 0;
        for (double e : x) ss += e * e;
        const double inv = 1.0 / std::sqrt(ss / double(x.size()) + double(float(c_.rms_norm_eps)));
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * weight[i];
        return y;
    }

    // Each head_dim-long slice of `x` normalised with the same weight.
    void head_norm(std::vector<double> &x, const std::vector<double> &weight) const {
        const size_t d = weight.size();
        for (size_t h = 0; h < x.size() / d; ++h) {
            const std::vector<double> head(x.begin() + long(h * d), x.begin() + long((h + 1) * d));
            const std::vector<double> y = rmsnorm(head, weight);
            std::copy(y.begin(), y.end(), x.begin() + long(h * d));
        }
    }

    // theta^(-2i/d), then the model's long-context scaling (Meta's llama3 apply_scaling, or
    // positions divided by the factor for linear).
    std::vector<double> inverse_frequencies() const {
        const int64_t d = c_.head_dim;
        const double theta = double(float(c_.rope.theta));  // what the op receives
        std::vector<double> inv(size_t(d / 2));
        for (size_t i = 0; i < inv.size(); ++i)
            inv[i] = std::pow(theta, -2.0 * double(i) / double(d));
        if (c_.rope.scaling == PAGODA_ROPE_SCALING_LINEAR) {
            for (double &f : inv) f /= double(float(c_.rope.factor));
        } else if (c_.rope.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
            const double factor = float(c_.rope.factor), lo = float(c_.rope.low_freq_factor),
                         hi = float(c_.rope.high_freq_factor),
                         old = double(c_.rope.original_max_position);
            for (double &f : inv) {
                const double wavelen = 2 * std::numbers::pi / f;
                if (wavelen < old / hi) continue;
                if (wavelen > old / lo) {
                    f /= factor;
                } else {
                    const double smooth = (old / wavelen - lo) / (hi - lo);
                    f = (1 - smooth) * f / factor + smooth * f;
                }
            }
        }
        return inv;
    }

    void rope(std::vector<double> &x, int64_t heads, int32_t pos) const {
        const int64_t d = c_.head_dim, half = d / 2;
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < half; ++i) {
                const double a = double(pos) * inv_freq_[size_t(i)];
                const size_t i0 =
                    size_t(h * d + (c_.rope.layout == PAGODA_ROPE_HALF_SPLIT ? i : 2 * i));
                const size_t i1 =
                    c_.rope.layout == PAGODA_ROPE_HALF_SPLIT ? i0 + size_t(half) : i0 + 1;
                const double x0 = x[i0], x1 = x[i1];
                x[i0] = x0 * std::cos(a) - x1 * std::sin(a);
                x[i1] = x1 * std::cos(a) + x0 * std::sin(a);
            }
    }

    model::ModelConfig c_;
    std::map<std::string, std::vector<double>> weights_;
    std::vector<double> inv_freq_;
};

}  // namespace pagoda::test
