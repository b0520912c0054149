#include "decode_weights.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>

namespace pagoda::bench {

namespace {

// GGUF metadata value types (the spec's gguf_metadata_value_type).
constexpr uint32_t kU32 = 4, kString = 8, kArray = 9;

// Sequential reads of a GGUF header; every failure names the file.
class HeaderReader {
public:
    explicit HeaderReader(const std::string &path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
        if (!file_) fail(std::string("cannot open (") + std::strerror(errno) + ")");
    }
    ~HeaderReader() { std::fclose(file_); }
    HeaderReader(const HeaderReader &) = delete;
    HeaderReader &operator=(const HeaderReader &) = delete;

    void bytes(void *p, size_t n) {
        if (std::fread(p, 1, n, file_) != n) fail("truncated GGUF header");
    }
    uint32_t u32() {
        uint32_t v;
        bytes(&v, 4);
        return v;
    }
    uint64_t u64() {
        uint64_t v;
        bytes(&v, 8);
        return v;
    }
    std::string string() {
        const uint64_t n = u64();
        if (n > (uint64_t(1) << 20)) fail("a metadata string longer than 1 MiB");
        std::string s(size_t(n), '\0');
        bytes(s.data(), s.size());
        return s;
    }
    void skip(uint64_t n) {
        if (n > uint64_t(INT64_MAX) || std::fseek(file_, long(n), SEEK_CUR) != 0) fail("cannot seek");
    }
    // Skips a value of `type`, arrays (of strings: a vocabulary) included.
    void skip_value(uint32_t type) {
        static constexpr uint8_t kFixedBytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (type == kString) {
            skip(u64());
        } else if (type == kArray) {
            const uint32_t element = u32();
            const uint64_t n = u64();
            if (element != kString && element != kArray && element < std::size(kFixedBytes)) {
                skip(n * kFixedBytes[element]);
            } else {
                for (uint64_t i = 0; i < n; ++i) skip_value(element);
            }
        } else if (type < std::size(kFixedBytes) && kFixedBytes[type] != 0) {
            skip(kFixedBytes[type]);
        } else {
            fail("unknown metadata value type " + std::to_string(type));
        }
    }
    [[noreturn]] void fail(const std::string &what) const { throw std::runtime_error(path_ + ": " + what); }

private:
    std::string path_;
    std::FILE *file_;
};

// The header's u32 keys and general.architecture.
struct GgufKeys {
    std::string architecture;
    std::map<std::string, uint32_t> counts;
    uint32_t count(const std::string &key, uint32_t otherwise) const {
        const auto it = counts.find(architecture + "." + key);
        return it == counts.end() ? otherwise : it->second;
    }
};

GgufKeys read_gguf_keys(const std::string &path) {
    HeaderReader in(path);
    char magic[4];
    in.bytes(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) != 0) in.fail("not a GGUF file");
    const uint32_t version = in.u32();
    if (version < 2) in.fail("GGUF version " + std::to_string(version) + " (2 or 3 expected)");
    in.u64();  // tensor count
    const uint64_t n_keys = in.u64();
    GgufKeys keys;
    for (uint64_t i = 0; i < n_keys; ++i) {
        const std::string key = in.string();
        const uint32_t type = in.u32();
        if (type == kU32) {
            keys.counts[key] = in.u32();
        } else if (type == kString && key == "general.architecture") {
            keys.architecture = in.string();
        } else {
            in.skip_value(type);
        }
    }
    return keys;
}

bool is_mixture_of_experts(const pagoda_model_info_t &info) {
    return std::strcmp(info.architecture, "mixtral") == 0 || std::strcmp(info.architecture, "qwen3moe") == 0;
}

}  // namespace

std::optional<ExpertShape> model_expert_shape(const std::string &path, const pagoda_model_info_t &info) {
    if (!is_mixture_of_experts(info)) return ExpertShape{};
    if (std::filesystem::is_directory(path)) return std::nullopt;
    const GgufKeys keys = read_gguf_keys(path);
    ExpertShape e;
    e.experts = keys.count("expert_count", 0);
    e.experts_per_token = keys.count("expert_used_count", 0);
    e.expert_ffn = keys.count("expert_feed_forward_length", uint32_t(info.intermediate_size));
    e.sparse_layers = info.n_layers;
    if (e.experts <= 0 || e.experts_per_token <= 0 || e.experts_per_token > e.experts)
        throw std::runtime_error(path + ": a " + info.architecture + " model without usable " +
                                 keys.architecture + ".expert_count and .expert_used_count keys");
    return e;
}

double expected_distinct_experts(const ExpertShape &e, int batch) {
    if (e.experts <= 0) return 0.0;
    const double E = double(e.experts), k = double(e.experts_per_token);
    return E * (1.0 - std::pow(1.0 - k / E, double(batch)));
}

StepWeights weights_read_per_step(const pagoda_model_info_t &m, const ExpertShape &e, int batch) {
    const double h = double(m.hidden_size), f = double(m.intermediate_size);
    const double q = double(m.n_heads * m.head_dim), kv = double(m.n_kv_heads * m.head_dim);
    double attention = h * q + 2 * h * kv + q * h + 2 * h;  // and the two RMSNorms
    if (std::strcmp(m.architecture, "qwen2") == 0) attention += q + 2 * kv;  // Q/K/V biases
    const double dense_mlp = 3 * h * f;
    const double expert = 3 * h * double(e.expert_ffn);  // gate, up and down
    const double sparse = double(e.sparse_layers), dense = double(m.n_layers) - sparse;
    const double router = double(e.experts) * h;
    const double head = h + double(m.vocab_size) * h;  // the final norm and the LM head

    StepWeights w;
    w.distinct_experts = expected_distinct_experts(e, batch);
    const double shared = double(m.n_layers) * attention + dense * dense_mlp + sparse * router + head;
    w.active = shared + sparse * w.distinct_experts * expert;
    w.total = shared + sparse * double(e.experts) * expert;
    return w;
}

}  // namespace pagoda::bench
