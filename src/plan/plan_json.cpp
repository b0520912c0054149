#include "plan/plan_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace pagoda::plan {

using nlohmann::json;

namespace {

constexpr const char *kFormat = "pagoda-plan";
constexpr int kVersion = 1;

[[noreturn]] void bad(const std::string &where, const std::string &what) {
    throw Error(PAGODA_ERR_FORMAT, "plan JSON: " + where + ": " + what);
}

const json &member(const json &obj, const char *key, const std::string &where) {
    if (!obj.is_object()) bad(where, "not an object");
    if (!obj.contains(key)) bad(where.empty() ? key : where + "." + key, "missing");
    return obj.at(key);
}

std::string path(const std::string &where, const char *key) { return where.empty() ? key : where + "." + key; }

int64_t get_int(const json &obj, const char *key, const std::string &where, int64_t min = 0) {
    const json &v = member(obj, key, where);
    if (!v.is_number_integer()) bad(path(where, key), std::string("want an integer, got ") + v.type_name());
    const int64_t i = v.get<int64_t>();
    if (i < min) bad(path(where, key), std::to_string(i) + " is below " + std::to_string(min));
    return i;
}

// A field later plans write and earlier ones lack (experts, expert parallelism).
int64_t get_int_or(const json &obj, const char *key, const std::string &where, int64_t absent, int64_t min = 0) {
    return obj.is_object() && !obj.contains(key) ? absent : get_int(obj, key, where, min);
}

double get_number(const json &obj, const char *key, const std::string &where) {
    const json &v = member(obj, key, where);
    if (!v.is_number()) bad(path(where, key), std::string("want a number, got ") + v.type_name());
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0) bad(path(where, key), "want a finite number >= 0");
    return d;
}

bool get_bool(const json &obj, const char *key, const std::string &where) {
    const json &v = member(obj, key, where);
    if (!v.is_boolean()) bad(path(where, key), std::string("want true or false, got ") + v.type_name());
    return v.get<bool>();
}

std::string get_string(const json &obj, const char *key, const std::string &where) {
    const json &v = member(obj, key, where);
    if (!v.is_string()) bad(path(where, key), std::string("want a string, got ") + v.type_name());
    return v.get<std::string>();
}

json slicing_json(const Slicing &s) {
    return {{"slices", s.lengths},
            {"latency_seconds", s.latency_seconds},
            {"total_slice_seconds", s.total_slice_seconds},
            {"max_slice_seconds", s.max_slice_seconds}};
}

Slicing parse_slicing(const json &j, const std::string &where, int64_t prompt_tokens, int64_t granularity) {
    Slicing s;
    const json &slices = member(j, "slices", where);
    if (!slices.is_array() || slices.empty()) bad(where + ".slices", "want a non-empty array");
    int64_t sum = 0;
    for (size_t i = 0; i < slices.size(); ++i) {
        const std::string at = where + ".slices[" + std::to_string(i) + "]";
        if (!slices[i].is_number_integer()) bad(at, "want an integer");
        const int64_t l = slices[i].get<int64_t>();
        if (l <= 0 || l % granularity != 0) bad(at, std::to_string(l) + " is not a positive multiple of the granularity");
        s.lengths.push_back(l);
        sum += l;
    }
    if (sum != prompt_tokens)
        bad(where + ".slices", "they add up to " + std::to_string(sum) + ", not prompt_tokens " + std::to_string(prompt_tokens));
    s.latency_seconds = get_number(j, "latency_seconds", where);
    s.total_slice_seconds = get_number(j, "total_slice_seconds", where);
    s.max_slice_seconds = get_number(j, "max_slice_seconds", where);
    return s;
}

const char *objective_name(PartitionObjective o) {
    return o == PartitionObjective::Latency ? "latency" : "throughput";
}

}  // namespace

std::string plan_to_json(const Plan &p) {
    json stages = json::array();
    for (const Stage &s : p.partition.stages)
        stages.push_back({{"first_layer", s.first_layer},
                          {"end_layer", s.end_layer},
                          {"nodes", s.shape.nodes},
                          {"devices", s.shape.devices},
                          {"tensor_parallel", s.tensor_parallel},
                          {"expert_parallel", s.expert_parallel},
                          {"has_embedding", s.has_embedding},
                          {"has_head", s.has_head},
                          {"seconds", s.seconds},
                          {"memory_bytes", s.memory_bytes}});
    json doc = {
        {"format", kFormat},
        {"version", kVersion},
        {"model",
         {{"hidden", p.shape.hidden}, {"intermediate", p.shape.intermediate}, {"layers", p.shape.layers},
          {"heads", p.shape.heads}, {"kv_heads", p.shape.kv_heads}, {"head_dim", p.shape.head_dim},
          {"vocab", p.shape.vocab}, {"tied_embeddings", p.shape.tied_embeddings}, {"experts", p.shape.experts},
          {"experts_per_token", p.shape.experts_per_token}, {"expert_intermediate", p.shape.expert_intermediate},
          {"sparse_layers", p.shape.sparse_layers}}},
        {"device", p.device},
        {"cost_source", p.cost_source},
        {"link_source", p.link_source},
        {"mesh", {{"nodes", p.mesh.nodes}, {"devices_per_node", p.mesh.devices_per_node}}},
        {"objective", objective_name(p.partition_options.objective)},
        {"micro_batches", p.partition_options.micro_batches},
        {"requested_stages", p.partition_options.stages},
        {"requested_tensor_parallel", p.partition_options.tensor_parallel},
        {"requested_expert_parallel", p.partition_options.expert_parallel},
        {"epsilon_seconds", p.partition_options.epsilon_seconds},
        {"workload",
         {{"tokens", p.workload.tokens}, {"context", p.workload.context}, {"kv_tokens", p.workload.kv_tokens},
          {"logit_rows", p.workload.logit_rows}}},
        {"stages", stages},
        {"latency_seconds", p.partition.latency_seconds},
        {"max_stage_seconds", p.partition.max_stage_seconds},
        {"throughput_per_second", p.partition.max_stage_seconds > 0 ? 1.0 / p.partition.max_stage_seconds : 0.0},
        {"objective_seconds", p.partition.objective_seconds},
        {"slicing", nullptr},
    };
    if (p.slicing) {
        const PlanSlicing &s = *p.slicing;
        doc["slicing"] = {{"prompt_tokens", s.prompt_tokens},
                          {"granularity", s.granularity},
                          {"stages", s.stages},
                          {"optimal", slicing_json(s.optimal)},
                          {"best_uniform", slicing_json(s.best_uniform)},
                          {"speedup_over_uniform", s.optimal.latency_seconds > 0
                                                       ? s.best_uniform.latency_seconds / s.optimal.latency_seconds
                                                       : 1.0}};
    }
    return doc.dump(2);
}

Plan plan_from_json(std::string_view text) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) throw Error(PAGODA_ERR_FORMAT, "plan JSON: not valid JSON");
    if (!doc.is_object()) bad("(top)", "want an object");
    if (get_string(doc, "format", "") != kFormat) bad("format", std::string("want \"") + kFormat + "\"");
    const int64_t version = get_int(doc, "version", "");
    if (version != kVersion)
        bad("version", std::to_string(version) + " (this library reads " + std::to_string(kVersion) + ")");

    Plan p;
    const json &m = member(doc, "model", "");
    p.shape.hidden = get_int(m, "hidden", "model", 1);
    p.shape.intermediate = get_int(m, "intermediate", "model", 1);
    p.shape.layers = get_int(m, "layers", "model", 1);
    p.shape.heads = get_int(m, "heads", "model", 1);
    p.shape.kv_heads = get_int(m, "kv_heads", "model", 1);
    p.shape.head_dim = get_int(m, "head_dim", "model", 1);
    p.shape.vocab = get_int(m, "vocab", "model", 1);
    p.shape.tied_embeddings = get_bool(m, "tied_embeddings", "model");
    p.shape.experts = get_int_or(m, "experts", "model", 0);
    p.shape.experts_per_token = get_int_or(m, "experts_per_token", "model", 0);
    p.shape.expert_intermediate = get_int_or(m, "expert_intermediate", "model", 0);
    p.shape.sparse_layers = get_int_or(m, "sparse_layers", "model", 0);
    try {
        validate(p.shape);
    } catch (const Error &e) {
        bad("model", e.what());
    }
    p.device = get_string(doc, "device", "");
    p.cost_source = get_string(doc, "cost_source", "");
    // Plans written before links were measured say nothing of them.
    p.link_source = doc.contains("link_source") ? get_string(doc, "link_source", "") : "assumed";
    const json &mesh = member(doc, "mesh", "");
    p.mesh.nodes = int32_t(get_int(mesh, "nodes", "mesh", 1));
    p.mesh.devices_per_node = int32_t(get_int(mesh, "devices_per_node", "mesh", 1));
    const std::string objective = get_string(doc, "objective", "");
    if (objective == "latency") p.partition_options.objective = PartitionObjective::Latency;
    else if (objective == "throughput") p.partition_options.objective = PartitionObjective::Throughput;
    else bad("objective", "\"" + objective + "\" is not \"latency\" or \"throughput\"");
    p.partition_options.micro_batches = int32_t(get_int(doc, "micro_batches", "", 1));
    p.partition_options.stages = int32_t(get_int(doc, "requested_stages", ""));
    p.partition_options.tensor_parallel = int32_t(get_int(doc, "requested_tensor_parallel", ""));
    p.partition_options.expert_parallel = int32_t(get_int_or(doc, "requested_expert_parallel", "", 0));
    p.partition_options.epsilon_seconds = get_number(doc, "epsilon_seconds", "");
    const json &w = member(doc, "workload", "");
    p.workload.tokens = get_int(w, "tokens", "workload", 1);
    p.workload.context = get_int(w, "context", "workload");
    p.workload.kv_tokens = get_int(w, "kv_tokens", "workload");
    p.workload.logit_rows = get_int(w, "logit_rows", "workload", 1);

    const json &stages = member(doc, "stages", "");
    if (!stages.is_array() || stages.empty()) bad("stages", "want a non-empty array");
    int64_t next_layer = 0;
    int64_t devices = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
        const std::string at = "stages[" + std::to_string(i) + "]";
        const json &j = stages[i];
        Stage s;
        s.first_layer = get_int(j, "first_layer", at);
        s.end_layer = get_int(j, "end_layer", at, 1);
        if (s.first_layer != next_layer)
            bad(at + ".first_layer", std::to_string(s.first_layer) + ", want " + std::to_string(next_layer) +
                                         " (stages must cover the layers in order)");
        if (s.end_layer <= s.first_layer || s.end_layer > p.shape.layers)
            bad(at + ".end_layer", std::to_string(s.end_layer) + " is not in (" + std::to_string(s.first_layer) +
                                       ", " + std::to_string(p.shape.layers) + "]");
        next_layer = s.end_layer;
        s.shape.nodes = int32_t(get_int(j, "nodes", at, 1));
        s.shape.devices = int32_t(get_int(j, "devices", at, 1));
        const bool valid_shape = (s.shape.nodes == 1 && s.shape.devices <= p.mesh.devices_per_node &&
                                  (s.shape.devices & (s.shape.devices - 1)) == 0) ||
                                 (s.shape.devices == p.mesh.devices_per_node && s.shape.nodes <= p.mesh.nodes);
        if (!valid_shape) bad(at, "sub-mesh (" + std::to_string(s.shape.nodes) + "," + std::to_string(s.shape.devices) +
                                      ") is not an Alpa shape of the mesh");
        devices += s.shape.device_count();
        s.tensor_parallel = int32_t(get_int(j, "tensor_parallel", at, 1));
        if (s.tensor_parallel != s.shape.device_count())
            bad(at + ".tensor_parallel", std::to_string(s.tensor_parallel) + ", want the sub-mesh's " +
                                             std::to_string(s.shape.device_count()) + " devices");
        s.expert_parallel = int32_t(get_int_or(j, "expert_parallel", at, 1, 1));
        try {
            expert_parallel_for(p.shape, s.tensor_parallel, s.expert_parallel);
        } catch (const Error &e) {
            bad(at + ".expert_parallel", e.what());
        }
        s.has_embedding = get_bool(j, "has_embedding", at);
        s.has_head = get_bool(j, "has_head", at);
        if (s.has_embedding != (i == 0) || s.has_head != (i + 1 == stages.size()))
            bad(at, "the embedding belongs to the first stage and the LM head to the last");
        s.seconds = get_number(j, "seconds", at);
        s.memory_bytes = get_number(j, "memory_bytes", at);
        p.partition.stages.push_back(s);
    }
    if (next_layer != p.shape.layers)
        bad("stages", "they end at layer " + std::to_string(next_layer) + " of " + std::to_string(p.shape.layers));
    if (devices != p.mesh.device_count())
        bad("stages", "they use " + std::to_string(devices) + " devices of the mesh's " +
                          std::to_string(p.mesh.device_count()));
    p.partition.latency_seconds = get_number(doc, "latency_seconds", "");
    p.partition.max_stage_seconds = get_number(doc, "max_stage_seconds", "");
    p.partition.objective_seconds = get_number(doc, "objective_seconds", "");

    const json &slicing = member(doc, "slicing", "");
    if (!slicing.is_null()) {
        PlanSlicing s;
        s.prompt_tokens = get_int(slicing, "prompt_tokens", "slicing", 1);
        s.granularity = get_int(slicing, "granularity", "slicing", 1);
        s.stages = int32_t(get_int(slicing, "stages", "slicing", 1));
        s.optimal = parse_slicing(member(slicing, "optimal", "slicing"), "slicing.optimal", s.prompt_tokens, s.granularity);
        s.best_uniform =
            parse_slicing(member(slicing, "best_uniform", "slicing"), "slicing.best_uniform", s.prompt_tokens, s.granularity);
        p.slicing = s;
    }
    return p;
}

}  // namespace pagoda::plan
