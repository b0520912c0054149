#include "capi/placement_spec.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "model/hf_config.hpp"
#include "common/json_text.hpp"

namespace pagoda::plan {

using nlohmann::json;

namespace {

// Field access that fails naming the source and the field's path.
class SpecReader {
public:
    explicit SpecReader(std::string source) : source_(std::move(source)) {}

    [[noreturn]] void fail(pagoda_status_t status, const std::string &path,
                           const std::string &what) const {
        throw Error(status, source_ + ": " + path + " " + what);
    }

    [[noreturn]] void wrong_type(const std::string &path, const char *wanted, const json &found) const {
        fail(PAGODA_ERR_FORMAT, path, std::string("must be ") + wanted + ", not " +
                                          json_type_phrase(found));
    }

    const json &object(const json &value, const std::string &path,
                       std::initializer_list<const char *> known) const {
        if (!value.is_object()) wrong_type(path, "an object", value);
        // A misspelt knob would otherwise be ignored silently.
        for (const auto &item : value.items()) {
            bool listed = false;
            for (const char *key : known) listed = listed || item.key() == key;
            if (!listed)
                fail(PAGODA_ERR_FORMAT, path, "has an unknown field \"" + item.key() + "\"");
        }
        return value;
    }

    const json &required(const json &object, const char *key, const std::string &path) const {
        const auto it = object.find(key);
        if (it == object.end()) fail(PAGODA_ERR_FORMAT, path, std::string("has no \"") + key + "\"");
        return *it;
    }

    int64_t integer(const json &value, const std::string &path, int64_t least) const {
        if (!value.is_number_integer()) wrong_type(path, "an integer", value);
        const int64_t v = value.get<int64_t>();
        if (v < least || v > INT32_MAX)
            fail(PAGODA_ERR_INVALID_ARGUMENT, path, "= " + std::to_string(v) + ": want " +
                                                        std::to_string(least) + " to " +
                                                        std::to_string(INT32_MAX));
        return v;
    }

    double number(const json &value, const std::string &path, double least, bool strict) const {
        if (!value.is_number()) wrong_type(path, "a number", value);
        const double v = value.get<double>();
        if (!std::isfinite(v) || v < least || (strict && v == least))
            fail(PAGODA_ERR_INVALID_ARGUMENT, path, "= " + std::to_string(v) + ": want a finite number " +
                                                        (strict ? "> " : "≥ ") + std::to_string(least));
        return v;
    }

    std::string string(const json &value, const std::string &path) const {
        if (!value.is_string()) wrong_type(path, "a string", value);
        return value.get<std::string>();
    }

    bool boolean(const json &value, const std::string &path) const {
        if (!value.is_boolean()) wrong_type(path, "true or false", value);
        return value.get<bool>();
    }

    const std::string &source() const noexcept { return source_; }

private:
    std::string source_;
};

std::string read_config_text(const std::string &path, const std::string &field) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(PAGODA_ERR_IO, field + ": cannot read \"" + path + "\"");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

ModelShape inline_shape(const SpecReader &read, const json &value, const std::string &path) {
    const json &s = read.object(value, path, {"hidden", "intermediate", "layers", "heads", "kv_heads",
                                              "head_dim", "vocab", "tied_embeddings"});
    auto field = [&](const char *key) { return read.integer(read.required(s, key, path), path + "." + key, 1); };
    ModelShape shape;
    shape.hidden = field("hidden");
    shape.intermediate = field("intermediate");
    shape.layers = field("layers");
    shape.heads = field("heads");
    shape.kv_heads = field("kv_heads");
    shape.vocab = field("vocab");
    // As in config.json: head_dim defaults to hidden / heads.
    shape.head_dim = s.contains("head_dim") ? read.integer(s["head_dim"], path + ".head_dim", 1)
                                            : shape.hidden / shape.heads;
    if (s.contains("tied_embeddings"))
        shape.tied_embeddings = read.boolean(s["tied_embeddings"], path + ".tied_embeddings");
    if (shape.heads % shape.kv_heads != 0)
        read.fail(PAGODA_ERR_INVALID_ARGUMENT, path, "has heads = " + std::to_string(shape.heads) +
                                                         ", not a multiple of kv_heads = " +
                                                         std::to_string(shape.kv_heads));
    return shape;
}

SpecModel spec_model(const SpecReader &read, const json &value, const std::string &path) {
    const json &m = read.object(value, path, {"name", "config", "shape", "slo", "rate", "path"});
    SpecModel model;
    model.placed.name = read.string(read.required(m, "name", path), path + ".name");
    if (model.placed.name.empty()) read.fail(PAGODA_ERR_INVALID_ARGUMENT, path + ".name", "is empty");
    // "path": the model's file or folder, passed on to the placement for a server to open; a
    // Hugging Face folder's config.json gives the shape when neither of the others does.
    if (m.contains("path")) model.placed.path = read.string(m["path"], path + ".path");
    const bool folder_config = !m.contains("config") && !m.contains("shape") &&
                               !model.placed.path.empty() &&
                               std::filesystem::is_regular_file(model.placed.path + "/config.json");
    const bool has_config = m.contains("config") || folder_config, has_shape = m.contains("shape");
    if (has_config == has_shape)
        read.fail(PAGODA_ERR_INVALID_ARGUMENT, path,
                  "must give exactly one of \"config\" (a config.json path) and \"shape\" (or a "
                  "\"path\" to a Hugging Face folder)");
    if (has_config) {
        const std::string file = folder_config ? model.placed.path + "/config.json"
                                               : read.string(m["config"], path + ".config");
        const std::string field = read.source() + ": " + path + ".config";
        model.shape = model_shape(model::parse_hf_config(read_config_text(file, field), file));
    } else {
        model.shape = inline_shape(read, m["shape"], path + ".shape");
    }
    if (m.contains("slo")) model.placed.slo_seconds = read.number(m["slo"], path + ".slo", 0.0, true);
    if (m.contains("rate")) model.rate = read.number(m["rate"], path + ".rate", 0.0, false);
    return model;
}

}  // namespace

PlacementSpec parse_placement_spec(std::string_view text, const std::string &source) {
    const json root = parse_json_text(text, source);
    const SpecReader read(source);
    read.object(root, "the spec", {"cluster", "models", "request", "search", "overhead"});
    PlacementSpec spec;

    const json &cluster = read.object(read.required(root, "cluster", "the spec"), "cluster",
                                      {"nodes", "devices_per_node", "device", "memory_bytes", "costs"});
    spec.cluster.nodes =
        cluster.contains("nodes") ? int32_t(read.integer(cluster["nodes"], "cluster.nodes", 1)) : 1;
    spec.cluster.devices_per_node = int32_t(read.integer(
        read.required(cluster, "devices_per_node", "cluster"), "cluster.devices_per_node", 1));
    // Measured costs name the device they were measured on; a preset beside them would be ignored.
    if (cluster.contains("costs")) {
        spec.cost_file = read.string(cluster["costs"], "cluster.costs");
        if (cluster.contains("device"))
            read.fail(PAGODA_ERR_INVALID_ARGUMENT, "cluster",
                      "gives both \"device\" and \"costs\": the cost file's entries describe the device");
    }
    const std::string device =
        cluster.contains("device") ? read.string(cluster["device"], "cluster.device") : "cpu";
    try {
        spec.device = device_preset(device);
    } catch (const Error &error) {
        throw Error(error.status(), source + ": cluster.device: " + error.what());
    }
    if (cluster.contains("memory_bytes")) {
        spec.device.memory_bytes = read.number(cluster["memory_bytes"], "cluster.memory_bytes", 0.0, true);
        spec.memory_given = true;
    }
    spec.cluster.device_memory_bytes = spec.device.memory_bytes;

    const json &models = read.required(root, "models", "the spec");
    if (!models.is_array()) read.wrong_type("models", "an array", models);
    if (models.empty()) read.fail(PAGODA_ERR_INVALID_ARGUMENT, "models", "is empty");
    std::set<std::string> names;
    for (size_t i = 0; i < models.size(); ++i) {
        const std::string path = "models[" + std::to_string(i) + "]";
        SpecModel model = spec_model(read, models[i], path);
        if (!names.insert(model.placed.name).second)
            read.fail(PAGODA_ERR_INVALID_ARGUMENT, path + ".name",
                      "\"" + model.placed.name + "\" is used by an earlier model");
        try {
            validate(model.shape);
        } catch (const Error &error) {
            throw Error(error.status(), source + ": " + path + ": " + error.what());
        }
        spec.models.push_back(std::move(model));
    }

    // A request is either one pipeline step of "tokens" (AlpaServe serves whole requests) or a
    // generation: its prompt, then one step per further output token.
    ServingWorkload step;
    step.tokens = 2048;
    if (root.contains("request")) {
        const json &r = read.object(root["request"], "request",
                                    {"tokens", "context", "kv_tokens", "prompt_tokens", "output_tokens"});
        const bool generation = r.contains("prompt_tokens") || r.contains("output_tokens");
        if (generation && (r.contains("tokens") || r.contains("context") || r.contains("kv_tokens")))
            read.fail(PAGODA_ERR_INVALID_ARGUMENT, "request",
                      "mixes one step (\"tokens\", \"context\", \"kv_tokens\") with a generation "
                      "(\"prompt_tokens\", \"output_tokens\"): give one or the other");
        if (generation) {
            const int64_t prompt = read.integer(read.required(r, "prompt_tokens", "request"), "request.prompt_tokens", 1);
            const int64_t output = read.integer(read.required(r, "output_tokens", "request"), "request.output_tokens", 1);
            spec.request = request_steps(prompt, output);
        }
        if (r.contains("tokens")) step.tokens = read.integer(r["tokens"], "request.tokens", 1);
        if (r.contains("context")) step.context = read.integer(r["context"], "request.context", 0);
        if (r.contains("kv_tokens")) step.kv_tokens = read.integer(r["kv_tokens"], "request.kv_tokens", 0);
    }
    if (spec.request.empty()) spec.request.push_back(step);
    if (root.contains("overhead")) spec.overhead_seconds = read.number(root["overhead"], "overhead", 0.0, false);

    if (root.contains("search")) {
        const json &s = read.object(root["search"], "search",
                                    {"max_pipeline", "max_tensor", "beam_width", "fast_greedy"});
        if (s.contains("max_pipeline"))
            spec.search.max_pipeline = int32_t(read.integer(s["max_pipeline"], "search.max_pipeline", 1));
        if (s.contains("max_tensor"))
            spec.search.max_tensor = int32_t(read.integer(s["max_tensor"], "search.max_tensor", 1));
        if (s.contains("beam_width"))
            spec.search.beam_width = int32_t(read.integer(s["beam_width"], "search.beam_width", 1));
        if (s.contains("fast_greedy"))
            spec.search.fast_greedy = read.boolean(s["fast_greedy"], "search.fast_greedy");
    }
    return spec;
}

CostModel spec_cost_model(const PlacementSpec &spec, const SpecModel &model) {
    if (spec.cost_file.empty()) return CostModel(model.shape, spec.device);
    try {
        return measured_cost_model(spec.cost_file, model.shape, spec.memory_given ? spec.device.memory_bytes : 0);
    } catch (const Error &error) {
        if (error.status() != PAGODA_ERR_NOT_FOUND) throw;
        throw Error(PAGODA_ERR_NOT_FOUND, "model \"" + model.placed.name + "\": cluster.costs: " + error.what() +
                                              " (measure it with `pagoda profile --model PATH --out " +
                                              spec.cost_file + "`)");
    }
}

}  // namespace pagoda::plan
