#include "model/pooling_config.hpp"

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/mapped_file.hpp"

namespace pagoda::model {

namespace {

using nlohmann::json;

json read_json(const std::string &path) {
    const MappedFile file(path);
    const std::string_view text(reinterpret_cast<const char *>(file.data()), file.size());
    return parse_json_text(text, path);
}

bool exists(const std::string &path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

// sentence-transformers' Pooling config: the first mode set, in vLLM's order of the keys.
void read_pooling_module(const std::string &path, PoolingConfig &out) {
    const json doc = read_json(path);
    if (!doc.is_object())
        throw Error(PAGODA_ERR_FORMAT, path + ": not a JSON object but " + json_type_phrase(doc));
    static const struct { const char *key, *name; PoolingKind kind; } kModes[] = {
        {"pooling_mode_cls_token", "cls", PoolingKind::unsupported},
        {"pooling_mode_mean_tokens", "mean", PoolingKind::mean},
        {"pooling_mode_max_tokens", "max", PoolingKind::unsupported},
        {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len", PoolingKind::unsupported},
        {"pooling_mode_weightedmean_tokens", "weightedmean", PoolingKind::unsupported},
        {"pooling_mode_lasttoken", "lasttoken", PoolingKind::last},
    };
    for (const auto &mode : kModes) {
        const auto it = doc.find(mode.key);
        if (it == doc.end() || !it->is_boolean() || !it->get<bool>()) continue;
        out.kind = mode.kind;
        out.named = mode.name;
        out.source = path + " (" + mode.key + ")";
        return;
    }
}

}  // namespace

PoolingConfig read_sentence_transformers_pooling(const std::string &folder) {
    PoolingConfig out;
    const std::string modules_path = folder + "/modules.json";
    if (!exists(modules_path)) return out;
    const json modules = read_json(modules_path);
    if (!modules.is_array())
        throw Error(PAGODA_ERR_FORMAT,
                    modules_path + ": not a JSON array but " + json_type_phrase(modules));
    out.normalize = 0;  // a pipeline without a Normalize module leaves the vector as pooled
    out.source = modules_path;
    for (const json &m : modules) {
        if (!m.is_object()) continue;
        const std::string type = m.value("type", std::string());
        if (type == "sentence_transformers.models.Normalize") out.normalize = 1;
        if (type != "sentence_transformers.models.Pooling") continue;
        const std::string dir = m.value("path", std::string());
        const std::string config = folder + "/" + (dir.empty() ? "" : dir + "/") + "config.json";
        if (exists(config)) read_pooling_module(config, out);
    }
    return out;
}

PoolingConfig gguf_pooling(uint32_t pooling_type, const std::string &source) {
    PoolingConfig out;
    out.source = source;
    switch (pooling_type) {
    case 1: out.kind = PoolingKind::mean; break;
    case 3: out.kind = PoolingKind::last; break;
    case 2:
        out.kind = PoolingKind::unsupported;
        out.named = "cls";
        break;
    case 4:
        out.kind = PoolingKind::unsupported;
        out.named = "rank";
        break;
    default: break;  // 0: none (token embeddings), or a type this reader does not know
    }
    return out;
}

}  // namespace pagoda::model
