#include "model/gguf_quantize.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "common/error.hpp"
#include "model/gguf_file.hpp"
#include "model/quant_blocks.hpp"
#include "model/quantize_blocks.hpp"

namespace pagoda::model {

namespace {

constexpr uint32_t kQuantizationVersion = 2;  // ggml's current block layouts

TensorType base_type(QuantMix mix) {
    switch (mix) {
    case QuantMix::Q8_0: return TensorType::Q8_0;
    case QuantMix::Q4_0: return TensorType::Q4_0;
    case QuantMix::Q4_K_M: return TensorType::Q4_K;
    case QuantMix::Q5_K_M: return TensorType::Q5_K;
    case QuantMix::Q6_K: return TensorType::Q6_K;
    }
    throw Error(PAGODA_ERR_INTERNAL, "quantize: unknown mix");
}

// llama.cpp's `general.file_type` (llama_ftype) of each mix.
uint32_t file_type(QuantMix mix) {
    switch (mix) {
    case QuantMix::Q8_0: return 7;
    case QuantMix::Q4_0: return 2;
    case QuantMix::Q4_K_M: return 15;
    case QuantMix::Q5_K_M: return 17;
    case QuantMix::Q6_K: return 18;
    }
    throw Error(PAGODA_ERR_INTERNAL, "quantize: unknown mix");
}

// The layers llama.cpp's _M mixes give more bits: the first and last eighth, and every third
// layer between.
bool more_bits(int64_t layer, int64_t n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// N of "blk.N.", or -1.
int64_t layer_of(const std::string &name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    char *end = nullptr;
    const long long n = std::strtoll(name.c_str() + 4, &end, 10);
    return end != name.c_str() + 4 && *end == '.' ? n : -1;
}

struct Planned {
    const SourceTensor *source;
    TensorType type;
    uint64_t bytes, offset;
};

// Quantizes one tensor's rows on `threads` threads into `out`; adds its error to `stats`.
// Row r of `t` as stored (its row_order applied, or from its part).
const unsigned char *source_row(const SourceTensor &t, uint64_t r, uint64_t row_bytes) {
    if (!t.parts.empty()) {
        const uint64_t part_rows = t.bytes / t.parts.size() / row_bytes;
        return t.parts[size_t(r / part_rows)] + (r % part_rows) * row_bytes;
    }
    const uint64_t stored = t.row_order.empty() ? r : t.row_order[size_t(r)];
    return t.data + stored * row_bytes;
}

void quantize_rows(const SourceTensor &t, TensorType type, int threads, unsigned char *out,
                   QuantizedTypeStats &stats) {
    // quant_type_for quantizes matrices and stacks of them (a mixture's experts) only.
    const uint64_t row = t.dims[0], rows = t.dims[1] * (t.dims.size() == 3 ? t.dims[2] : 1);
    const uint64_t in_row_bytes = row * block_layout(t.type).bytes;
    const uint64_t out_row_bytes = row / block_layout(type).elements * block_layout(type).bytes;
    struct Partial {
        double squared_error = 0, squared_values = 0;
        std::exception_ptr error;
    };
    std::vector<Partial> partial(static_cast<size_t>(threads));
    auto work = [&](int w) {
        try {
            std::vector<float> x(row), y(row);
            for (uint64_t r = uint64_t(w); r < rows; r += uint64_t(threads)) {
                widen_row(t.type, source_row(t, r, in_row_bytes), row, x.data());
                unsigned char *dst = out + r * out_row_bytes;
                quantize(type, x.data(), row, dst);
                dequantize(type, dst, row, y.data());
                for (uint64_t i = 0; i < row; ++i) {
                    const double e = double(y[i]) - x[i];
                    partial[size_t(w)].squared_error += e * e;
                    partial[size_t(w)].squared_values += double(x[i]) * x[i];
                }
            }
        } catch (...) {
            partial[size_t(w)].error = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread &th : pool) th.join();
    for (const Partial &p : partial) {
        if (p.error) {
            try {
                std::rethrow_exception(p.error);
            } catch (const Error &e) {
                throw Error(e.status(), "tensor '" + t.name + "': " + e.what());
            }
        }
        stats.squared_error += p.squared_error;
        stats.squared_values += p.squared_values;
    }
    stats.tensors += 1;
    stats.values += rows * row;
}

// The statistics of type `t`, added in TensorType order when new.
QuantizedTypeStats &stats_for(QuantizeSummary &s, TensorType t) {
    auto it = std::lower_bound(s.types.begin(), s.types.end(), t,
                               [](const QuantizedTypeStats &q, TensorType type) { return q.type < type; });
    if (it == s.types.end() || it->type != t) {
        it = s.types.insert(it, QuantizedTypeStats{});
        it->type = t;
    }
    return *it;
}

}  // namespace

void widen_row(TensorType t, const unsigned char *src, uint64_t n, float *dst) {
    switch (t) {
    case TensorType::F32:
        std::memcpy(dst, src, size_t(n) * 4);
        return;
    case TensorType::F16:
        for (uint64_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            dst[i] = half_to_float(h);
        }
        return;
    case TensorType::BF16:
        for (uint64_t i = 0; i < n; ++i) {
            uint16_t b;
            std::memcpy(&b, src + 2 * i, 2);
            const uint32_t bits = uint32_t(b) << 16;
            std::memcpy(&dst[i], &bits, 4);
        }
        return;
    default: throw Error(PAGODA_ERR_INTERNAL, "quantize: not a float source");
    }
}

TensorType quant_type_for(QuantMix mix, const std::string &name, const std::vector<uint64_t> &dims,
                          TensorType source, int64_t n_layers, bool has_output) {
    if (dims.size() < 2 || dims.size() > 3 || !ends_with(name, ".weight")) return source;  // norms, biases
    // A mixture's router stays as it is, as llama.cpp leaves it: its logits pick the experts,
    // and a rounded one picks others.
    if (ends_with(name, ".ffn_gate_inp.weight")) return source;
    TensorType t = base_type(mix);
    const bool output = name == "output.weight" || (!has_output && name == "token_embd.weight");
    if (output && mix != QuantMix::Q8_0) {
        t = TensorType::Q6_K;
    } else if ((mix == QuantMix::Q4_K_M || mix == QuantMix::Q5_K_M) &&
               (ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight") ||
                ends_with(name, ".ffn_down_exps.weight"))) {
        if (more_bits(layer_of(name), n_layers)) t = TensorType::Q6_K;
    }
    // Rows must be whole blocks: a row no 256-value block fits takes Q8_0's 32-value blocks,
    // and one no block fits stays as it is.
    if (dims[0] % block_layout(t).elements != 0) t = dims[0] % 32 == 0 ? TensorType::Q8_0 : source;
    return t;
}

QuantizeSource gguf_quantize_source(const std::string &path) {
    auto file = std::make_shared<const GgufFile>(path);
    const GgufFile &in = *file;
    QuantizeSource source;
    source.path = path;
    const std::string arch = in.get_string("general.architecture");
    source.n_layers = in.get_u32(arch + ".block_count");
    source.alignment = in.alignment();
    for (const auto &[key, value] : in.metadata()) source.metadata.set_encoded(key, value);
    for (const GgufTensor &t : in.tensors()) {
        if (is_quantized(t.type))
            throw Error(PAGODA_ERR_UNSUPPORTED, path + ": tensor '" + t.name + "' is already " +
                                                    tensor_type_name(t.type) +
                                                    ": quantize from an F32, F16 or BF16 file");
        source.tensors.push_back({t.name, t.type, t.dims, t.data, t.bytes, {}, {}});
    }
    source.backing = std::move(file);
    return source;
}

QuantizeSummary quantize_to_gguf(const QuantizeSource &source, const std::string &output_path,
                                 QuantMix mix, int threads, const ProgressFn &progress) {
    if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
    const uint64_t alignment = source.alignment;
    bool has_output = false;
    for (const SourceTensor &t : source.tensors) has_output = has_output || t.name == "output.weight";

    // The plan: each tensor's type, size and place in the output's data section.
    QuantizeSummary summary;
    std::vector<Planned> plan;
    uint64_t data_bytes = 0, quantized_input = 0;
    for (const SourceTensor &t : source.tensors) {
        const TensorType type = quant_type_for(mix, t.name, t.dims, t.type, source.n_layers, has_output);
        uint64_t elements = 1;
        for (uint64_t d : t.dims) elements *= d;
        const uint64_t bytes = type == t.type ? t.bytes : tensor_bytes(type, elements, t.name);
        data_bytes = (data_bytes + alignment - 1) / alignment * alignment;
        plan.push_back({&t, type, bytes, data_bytes});
        data_bytes += bytes;
        if (type != t.type) quantized_input += t.bytes;
        summary.input_bytes += t.bytes;
    }

    GgufMetadata metadata = source.metadata;
    metadata.erase("general.file_type");
    metadata.erase("general.quantization_version");
    metadata.set_u32("general.file_type", file_type(mix));
    metadata.set_u32("general.quantization_version", kQuantizationVersion);

    GgufOutputFile out(output_path);
    out.write_header(plan.size(), metadata);
    for (const Planned &p : plan)
        out.write_tensor_info(p.source->name, p.source->dims, ggml_type_id(p.type), p.offset);
    out.pad_to(alignment);

    const uint64_t data_start = out.written();
    uint64_t done = 0;
    std::vector<unsigned char> buffer;
    for (const Planned &p : plan) {
        out.pad_to(alignment);
        if (out.written() - data_start != p.offset)
            throw Error(PAGODA_ERR_INTERNAL, "quantize: tensor '" + p.source->name + "' misplaced");
        const SourceTensor &t = *p.source;
        if (p.type == t.type) {
            if (t.row_order.empty() && t.parts.empty()) {
                out.write(t.data, size_t(p.bytes));
            } else {
                uint64_t rows = 1;
                for (size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
                const uint64_t row_bytes = t.bytes / rows;
                for (uint64_t r = 0; r < rows; ++r) out.write(source_row(t, r, row_bytes), size_t(row_bytes));
            }
            summary.tensors_kept += 1;
            continue;
        }
        if (progress && !progress(double(done) / double(std::max<uint64_t>(quantized_input, 1)), t.name.c_str()))
            throw Error(PAGODA_ERR_CANCELLED, output_path + ": quantizing cancelled");
        buffer.assign(size_t(p.bytes), 0);
        quantize_rows(t, p.type, threads, buffer.data(), stats_for(summary, p.type));
        out.write(buffer.data(), buffer.size());
        done += t.bytes;
    }
    summary.output_bytes = out.written();
    out.commit();
    if (progress) progress(1.0, "done");
    return summary;
}

QuantizeSummary quantize_gguf(const std::string &input_path, const std::string &output_path,
                              QuantMix mix, int threads, const ProgressFn &progress) {
    return quantize_to_gguf(gguf_quantize_source(input_path), output_path, mix, threads, progress);
}

}  // namespace pagoda::model
