#include "plan/measured_costs.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "plan/json_field.hpp"

namespace pagoda::plan {

using nlohmann::json;

namespace {

constexpr const char *kFormat = "pagoda-costs";
constexpr int kVersion = 1;

json shape_json(const ModelShape &s) {
    return {{"hidden", s.hidden}, {"intermediate", s.intermediate}, {"layers", s.layers},
            {"heads", s.heads},   {"kv_heads", s.kv_heads},         {"head_dim", s.head_dim},
            {"vocab", s.vocab},   {"tied_embeddings", s.tied_embeddings}};
}

json spec_json(const DeviceSpec &d) {
    return {{"name", d.name},
            {"peak_flops", d.peak_flops},
            {"memory_bandwidth", d.memory_bandwidth},
            {"memory_bytes", d.memory_bytes},
            {"intra_node_bandwidth", d.intra_node_bandwidth},
            {"inter_node_bandwidth", d.inter_node_bandwidth},
            {"intra_node_latency", d.intra_node_latency},
            {"inter_node_latency", d.inter_node_latency},
            {"devices_per_node", d.devices_per_node},
            {"weight_bytes", d.weight_bytes},
            {"kv_bytes", d.kv_bytes},
            {"activation_bytes", d.activation_bytes},
            {"layer_overhead", d.layer_overhead}};
}

json entry_json(const MeasuredLayerCosts &c) {
    return {{"backend", c.backend},
            {"device", c.device},
            {"dtype", c.dtype},
            {"shape", shape_json(c.shape)},
            {"tensor_parallel", c.tensor_parallel},
            {"device_spec", spec_json(c.device_spec)},
            {"granularity", c.granularity},
            {"no_context_seconds", c.no_context_seconds},
            {"fit", {{"a0", c.fit.a0}, {"a1", c.fit.a1}, {"a2", c.fit.a2}, {"a3", c.fit.a3}}},
            {"context_fit_error", c.context_fit_error},
            {"total_fit_error", c.total_fit_error},
            {"fit_samples", c.fit_samples},
            {"holdout_samples", c.holdout_samples}};
}

ModelShape parse_shape(const json &j, const std::string &where) {
    ModelShape s;
    s.hidden = field<int64_t>(j, "hidden", where);
    s.intermediate = field<int64_t>(j, "intermediate", where);
    s.layers = field<int64_t>(j, "layers", where);
    s.heads = field<int64_t>(j, "heads", where);
    s.kv_heads = field<int64_t>(j, "kv_heads", where);
    s.head_dim = field<int64_t>(j, "head_dim", where);
    s.vocab = field<int64_t>(j, "vocab", where);
    s.tied_embeddings = field<bool>(j, "tied_embeddings", where);
    return s;
}

DeviceSpec parse_spec(const json &j, const std::string &where) {
    DeviceSpec d;
    d.name = field<std::string>(j, "name", where);
    d.peak_flops = field<double>(j, "peak_flops", where);
    d.memory_bandwidth = field<double>(j, "memory_bandwidth", where);
    d.memory_bytes = field<double>(j, "memory_bytes", where);
    d.intra_node_bandwidth = field<double>(j, "intra_node_bandwidth", where);
    d.inter_node_bandwidth = field<double>(j, "inter_node_bandwidth", where);
    d.intra_node_latency = field<double>(j, "intra_node_latency", where);
    d.inter_node_latency = field<double>(j, "inter_node_latency", where);
    d.devices_per_node = field<int32_t>(j, "devices_per_node", where);
    d.weight_bytes = field<double>(j, "weight_bytes", where);
    d.kv_bytes = field<double>(j, "kv_bytes", where);
    d.activation_bytes = field<double>(j, "activation_bytes", where);
    d.layer_overhead = field<double>(j, "layer_overhead", where);
    return d;
}

MeasuredLayerCosts parse_entry(const json &j, const std::string &where) {
    MeasuredLayerCosts c;
    c.backend = field<std::string>(j, "backend", where);
    c.device = field<std::string>(j, "device", where);
    c.dtype = field<std::string>(j, "dtype", where);
    if (!j.contains("shape")) throw Error(PAGODA_ERR_FORMAT, where + ": missing \"shape\"");
    c.shape = parse_shape(j.at("shape"), where + ".shape");
    // Files written before groups were timed have no degree: one device.
    if (j.contains("tensor_parallel")) c.tensor_parallel = field<int32_t>(j, "tensor_parallel", where);
    if (!j.contains("device_spec")) throw Error(PAGODA_ERR_FORMAT, where + ": missing \"device_spec\"");
    c.device_spec = parse_spec(j.at("device_spec"), where + ".device_spec");
    c.granularity = field<int64_t>(j, "granularity", where);
    if (!j.contains("no_context_seconds") || !j.at("no_context_seconds").is_array())
        throw Error(PAGODA_ERR_FORMAT, where + ": \"no_context_seconds\" must be an array");
    size_t i = 0;
    for (const json &v : j.at("no_context_seconds")) {
        if (!v.is_number())
            throw Error(PAGODA_ERR_FORMAT, where + ".no_context_seconds[" + std::to_string(i) + "] is not a number");
        c.no_context_seconds.push_back(v.get<double>());
        ++i;
    }
    if (!j.contains("fit")) throw Error(PAGODA_ERR_FORMAT, where + ": missing \"fit\"");
    const json &f = j.at("fit");
    c.fit = {field<double>(f, "a0", where + ".fit"), field<double>(f, "a1", where + ".fit"),
             field<double>(f, "a2", where + ".fit"), field<double>(f, "a3", where + ".fit")};
    c.context_fit_error = field<double>(j, "context_fit_error", where);
    c.total_fit_error = field<double>(j, "total_fit_error", where);
    c.fit_samples = field<int64_t>(j, "fit_samples", where);
    c.holdout_samples = field<int64_t>(j, "holdout_samples", where);
    try {
        validate(c);
    } catch (const Error &e) {
        throw Error(PAGODA_ERR_FORMAT, where + ": " + e.what());
    }
    return c;
}

bool same_key(const MeasuredLayerCosts &a, const MeasuredLayerCosts &b) {
    return a.backend == b.backend && a.device == b.device && a.shape == b.shape &&
           a.tensor_parallel == b.tensor_parallel;
}

}  // namespace

double MeasuredLayerCosts::seconds(int64_t tokens, int64_t context) const {
    const int64_t n = int64_t(no_context_seconds.size());
    // Grid point i holds l = (i+1)·g; interpolate linearly between neighbours.
    const double x = double(tokens) / double(granularity) - 1.0;
    double base;
    if (x <= 0) base = no_context_seconds.front();  // below the grid: the flat region (Fig. 3)
    else if (n == 1) base = no_context_seconds.front() * (x + 1.0);
    else {
        const int64_t i = std::min<int64_t>(int64_t(x), n - 2);
        const double w = x - double(i);
        base = no_context_seconds[size_t(i)] * (1 - w) + no_context_seconds[size_t(i) + 1] * w;
    }
    return std::max(0.0, base + fit(tokens, context));
}

std::string measured_costs_json(const MeasuredLayerCosts &costs) { return entry_json(costs).dump(); }

void validate(const MeasuredLayerCosts &c) {
    validate(c.shape);
    validate(c.device_spec);
    if (c.tensor_parallel < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "measured costs: tensor_parallel is " + std::to_string(c.tensor_parallel) + ", want >= 1");
    if (c.granularity <= 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs: granularity is " + std::to_string(c.granularity));
    if (c.no_context_seconds.empty())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs: no_context_seconds is empty");
    for (size_t i = 0; i < c.no_context_seconds.size(); ++i)
        if (!(c.no_context_seconds[i] >= 0) || std::isinf(c.no_context_seconds[i]))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs: no_context_seconds[" + std::to_string(i) +
                                                         "] is " + std::to_string(c.no_context_seconds[i]));
    for (double a : {c.fit.a0, c.fit.a1, c.fit.a2, c.fit.a3})
        if (!std::isfinite(a)) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured costs: a fit coefficient is not finite");
}

CostFile read_cost_document(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(PAGODA_ERR_IO, "cannot read the cost file " + path);
    std::stringstream text;
    text << in.rdbuf();
    const json doc = json::parse(text.str(), nullptr, false);
    if (doc.is_discarded()) throw Error(PAGODA_ERR_FORMAT, path + ": not valid JSON");
    if (field<std::string>(doc, "format", path) != kFormat)
        throw Error(PAGODA_ERR_FORMAT, path + ": \"format\" is not \"" + kFormat + "\"");
    const int64_t version = field<int64_t>(doc, "version", path);
    if (version != kVersion)
        throw Error(PAGODA_ERR_FORMAT, path + ": version " + std::to_string(version) + " (this library reads " +
                                           std::to_string(kVersion) + ")");
    if (!doc.contains("entries") || !doc.at("entries").is_array())
        throw Error(PAGODA_ERR_FORMAT, path + ": \"entries\" must be an array");
    CostFile out;
    for (const json &e : doc.at("entries"))
        out.entries.push_back(parse_entry(e, path + ": entries[" + std::to_string(out.entries.size()) + "]"));
    // Files written before links were measured have none.
    if (doc.contains("links")) {
        if (!doc.at("links").is_array()) throw Error(PAGODA_ERR_FORMAT, path + ": \"links\" must be an array");
        for (const json &l : doc.at("links"))
            out.links.push_back(measured_link_from_json(l, path + ": links[" + std::to_string(out.links.size()) + "]"));
    }
    return out;
}

namespace {

// The file at `path`, or an empty one when there is none yet.
CostFile read_or_new_document(const std::string &path) {
    return std::ifstream(path).good() ? read_cost_document(path) : CostFile{};
}

void write_document(const std::string &path, const CostFile &d) {
    json doc = {{"format", kFormat}, {"version", kVersion}, {"entries", json::array()}};
    for (const MeasuredLayerCosts &e : d.entries) doc["entries"].push_back(entry_json(e));
    if (!d.links.empty()) {
        doc["links"] = json::array();
        for (const MeasuredLink &l : d.links) doc["links"].push_back(measured_link_to_json(l));
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << doc.dump(1) << "\n";
    if (!out) throw Error(PAGODA_ERR_IO, "cannot write the cost file " + path);
}

}  // namespace

std::vector<MeasuredLayerCosts> read_cost_file(const std::string &path) { return read_cost_document(path).entries; }

std::vector<MeasuredLink> read_measured_links(const std::string &path) { return read_cost_document(path).links; }

void save_measured_costs(const std::string &path, const MeasuredLayerCosts &costs) {
    validate(costs);
    CostFile doc = read_or_new_document(path);
    bool replaced = false;
    for (MeasuredLayerCosts &e : doc.entries)
        if (same_key(e, costs)) {
            e = costs;
            replaced = true;
        }
    if (!replaced) doc.entries.push_back(costs);
    write_document(path, doc);
}

void save_measured_link(const std::string &path, const MeasuredLink &link) {
    validate(link);
    CostFile doc = read_or_new_document(path);
    bool replaced = false;
    for (MeasuredLink &l : doc.links)
        if (l.backend == link.backend && l.path == link.path) {
            l = link;
            replaced = true;
        }
    if (!replaced) doc.links.push_back(link);
    write_document(path, doc);
}

namespace {

// The one-device entry of `entries` for `shape` (and `backend`/`device` unless empty), or
// NOT_FOUND naming `path` and listing what it holds.
const MeasuredLayerCosts &one_device_entry(const std::vector<MeasuredLayerCosts> &entries, const std::string &path,
                                           const ModelShape &shape, const std::string &backend,
                                           const std::string &device) {
    std::string held;
    for (const MeasuredLayerCosts &e : entries) {
        if (e.shape == shape && e.tensor_parallel == 1 && (backend.empty() || e.backend == backend) &&
            (device.empty() || e.device == device))
            return e;
        held += (held.empty() ? "" : "; ") + e.backend + " / " + e.device + " / " + e.shape.key() +
                (e.tensor_parallel > 1 ? " / tp=" + std::to_string(e.tensor_parallel) : "");
    }
    throw Error(PAGODA_ERR_NOT_FOUND, path + ": no one-device measurement for model shape " + shape.key() +
                                          (backend.empty() ? "" : " on backend " + backend) +
                                          (device.empty() ? "" : " device " + device) + " (the file holds: " +
                                          (held.empty() ? "nothing" : held) + ")");
}

}  // namespace

MeasuredLayerCosts find_measured_costs(const std::string &path, const ModelShape &shape,
                                       const std::string &backend, const std::string &device) {
    return one_device_entry(read_cost_file(path), path, shape, backend, device);
}

std::vector<MeasuredLayerCosts> find_measured_cost_set(const std::string &path, const ModelShape &shape) {
    return find_measured_cost_set(read_cost_document(path), path, shape);
}

std::vector<MeasuredLayerCosts> find_measured_cost_set(const CostFile &file, const std::string &path,
                                                       const ModelShape &shape) {
    std::vector<MeasuredLayerCosts> out{one_device_entry(file.entries, path, shape, "", "")};
    std::map<int32_t, const MeasuredLayerCosts *> groups;
    for (const MeasuredLayerCosts &e : file.entries)
        if (e.shape == shape && e.tensor_parallel > 1) groups.try_emplace(e.tensor_parallel, &e);
    for (const auto &[tp, e] : groups) out.push_back(*e);
    return out;
}

}  // namespace pagoda::plan
