#include "plan/placement.hpp"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"

namespace pagoda::plan {

using nlohmann::json;

double PlacementGroup::stage_bytes(size_t stage) const noexcept {
    double total = 0.0;
    for (const Replica &replica : replicas)
        if (stage < replica.stage_bytes.size()) total += replica.stage_bytes[stage];
    return total;
}

size_t Placement::replica_count(uint32_t model) const noexcept {
    size_t count = 0;
    for (const PlacementGroup &group : groups)
        for (const Replica &replica : group.replicas)
            if (replica.model == model) ++count;
    return count;
}

namespace {

[[noreturn]] void invalid(const std::string &message) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT, "placement: " + message);
}

std::string group_path(size_t g) { return "groups[" + std::to_string(g) + "]"; }

void check_stage_list(const std::vector<double> &values, size_t pipeline, const std::string &path,
                      bool may_be_empty) {
    if (values.empty() && may_be_empty) return;
    if (values.size() != pipeline)
        invalid(path + " has " + std::to_string(values.size()) + " entries but the group has " +
                std::to_string(pipeline) + " stages");
    for (size_t s = 0; s < values.size(); ++s)
        if (!(values[s] >= 0.0) || !std::isfinite(values[s]))
            invalid(path + "[" + std::to_string(s) + "] = " + std::to_string(values[s]) +
                    " is not a finite number ≥ 0");
}

}  // namespace

void validate(const Placement &placement) {
    std::unordered_set<std::string> names;
    for (size_t m = 0; m < placement.models.size(); ++m) {
        const PlacedModel &model = placement.models[m];
        const std::string path = "models[" + std::to_string(m) + "]";
        if (model.name.empty()) invalid(path + ".name is empty");
        if (!names.insert(model.name).second)
            invalid(path + ".name \"" + model.name + "\" is used by an earlier model");
        if (!(model.slo_seconds > 0.0))
            invalid(path + ".slo = " + std::to_string(model.slo_seconds) + " is not > 0");
    }
    if (!(placement.overhead_seconds >= 0.0) || !std::isfinite(placement.overhead_seconds))
        invalid("overhead = " + std::to_string(placement.overhead_seconds) + " is not a finite number ≥ 0");
    std::unordered_set<int32_t> devices;
    for (size_t g = 0; g < placement.groups.size(); ++g) {
        const PlacementGroup &group = placement.groups[g];
        const std::string path = group_path(g);
        if (group.pipeline < 1 || group.tensor < 1)
            invalid(path + " has pipeline " + std::to_string(group.pipeline) + " and tensor " +
                    std::to_string(group.tensor) + "; both must be ≥ 1");
        const size_t expected = size_t(group.pipeline) * size_t(group.tensor);
        if (group.devices.size() != expected)
            invalid(path + " has " + std::to_string(group.devices.size()) +
                    " devices but pipeline × tensor = " + std::to_string(expected));
        for (int32_t device : group.devices) {
            if (device < 0) invalid(path + " names device " + std::to_string(device));
            if (!devices.insert(device).second)
                invalid(path + " uses device " + std::to_string(device) +
                        ", which an earlier group already uses");
        }
        std::unordered_set<uint32_t> models_here;
        for (size_t r = 0; r < group.replicas.size(); ++r) {
            const Replica &replica = group.replicas[r];
            const std::string replica_path = path + ".replicas[" + std::to_string(r) + "]";
            if (replica.model >= placement.models.size())
                invalid(replica_path + ".model = " + std::to_string(replica.model) + " but there are " +
                        std::to_string(placement.models.size()) + " models");
            if (!models_here.insert(replica.model).second)
                invalid(replica_path + " repeats model \"" + placement.models[replica.model].name +
                        "\" in the same group");
            check_stage_list(replica.stage_seconds, size_t(group.pipeline),
                             replica_path + ".stage_seconds", false);
            check_stage_list(replica.stage_bytes, size_t(group.pipeline),
                             replica_path + ".stage_bytes", true);
        }
    }
}

std::string group_device_list(const PlacementGroup &group, const std::string &kind) {
    std::string list;
    for (int32_t d : group.devices) list += (list.empty() ? "" : ",") + kind + ":" + std::to_string(d);
    return list;
}

std::string group_axes(const PlacementGroup &group) {
    std::string axes;
    if (group.pipeline > 1) axes = "pp=" + std::to_string(group.pipeline);
    if (group.tensor > 1) axes += (axes.empty() ? "" : ",") + std::string("tp=") + std::to_string(group.tensor);
    return axes;
}

std::string placement_to_json(const Placement &placement) {
    json out = json::object();
    json models = json::array();
    for (const PlacedModel &model : placement.models) {
        json entry = {{"name", model.name}};
        if (std::isfinite(model.slo_seconds)) entry["slo"] = model.slo_seconds;
        if (!model.path.empty()) entry["path"] = model.path;
        models.push_back(std::move(entry));
    }
    json groups = json::array();
    for (const PlacementGroup &group : placement.groups) {
        json replicas = json::array();
        for (const Replica &replica : group.replicas) {
            json entry = {{"model", placement.models.at(replica.model).name},
                          {"stage_seconds", replica.stage_seconds}};
            if (!replica.stage_bytes.empty()) entry["stage_bytes"] = replica.stage_bytes;
            replicas.push_back(std::move(entry));
        }
        groups.push_back({{"devices", group.devices},
                          {"pipeline", group.pipeline},
                          {"tensor", group.tensor},
                          {"replicas", std::move(replicas)}});
    }
    if (placement.overhead_seconds > 0.0) out["overhead"] = placement.overhead_seconds;
    if (!placement.reject_late) out["reject_late"] = false;
    out["models"] = std::move(models);
    out["groups"] = std::move(groups);
    return out.dump();
}

namespace {

// Field access that fails with the field's path and what was found there.
class Reader {
public:
    explicit Reader(std::string source) : source_(std::move(source)) {}

    [[noreturn]] void wrong(const std::string &path, const char *wanted, const json &found) const {
        throw Error(PAGODA_ERR_FORMAT, source_ + ": " + path + " must be " + wanted + ", not " +
                                           json_type_phrase(found));
    }

    const json &member(const json &object, const char *key, const std::string &path) const {
        if (!object.is_object()) wrong(path, "an object", object);
        const auto it = object.find(key);
        if (it == object.end())
            throw Error(PAGODA_ERR_FORMAT, source_ + ": " + path + " has no \"" + key + "\"");
        return *it;
    }

    const json &array(const json &value, const std::string &path) const {
        if (!value.is_array()) wrong(path, "an array", value);
        return value;
    }

    double number(const json &value, const std::string &path) const {
        if (!value.is_number()) wrong(path, "a number", value);
        return value.get<double>();
    }

    int32_t integer(const json &value, const std::string &path) const {
        if (!value.is_number_integer()) wrong(path, "an integer", value);
        const int64_t v = value.get<int64_t>();
        if (v < INT32_MIN || v > INT32_MAX)
            throw Error(PAGODA_ERR_FORMAT, source_ + ": " + path + " = " + std::to_string(v) +
                                               " is out of range");
        return int32_t(v);
    }

    std::string string(const json &value, const std::string &path) const {
        if (!value.is_string()) wrong(path, "a string", value);
        return value.get<std::string>();
    }

    bool boolean(const json &value, const std::string &path) const {
        if (!value.is_boolean()) wrong(path, "true or false", value);
        return value.get<bool>();
    }

    std::vector<double> numbers(const json &value, const std::string &path) const {
        std::vector<double> out;
        const json &list = array(value, path);
        for (size_t i = 0; i < list.size(); ++i)
            out.push_back(number(list[i], path + "[" + std::to_string(i) + "]"));
        return out;
    }

    const std::string &source() const noexcept { return source_; }

private:
    std::string source_;
};

}  // namespace

Placement placement_from_json(std::string_view text, const std::string &source) {
    const json root = parse_json_text(text, source);
    const Reader read(source);
    Placement placement;
    std::unordered_map<std::string, uint32_t> ids;

    const json &models = read.array(read.member(root, "models", "the placement"), "models");
    for (size_t m = 0; m < models.size(); ++m) {
        const std::string path = "models[" + std::to_string(m) + "]";
        PlacedModel model;
        model.name = read.string(read.member(models[m], "name", path), path + ".name");
        if (models[m].contains("slo"))
            model.slo_seconds = read.number(models[m]["slo"], path + ".slo");
        if (models[m].contains("path"))
            model.path = read.string(models[m]["path"], path + ".path");
        ids.emplace(model.name, uint32_t(m));  // repeats are reported by validate()
        placement.models.push_back(std::move(model));
    }

    if (root.contains("overhead")) placement.overhead_seconds = read.number(root["overhead"], "overhead");
    if (root.contains("reject_late")) placement.reject_late = read.boolean(root["reject_late"], "reject_late");
    const json &groups = read.array(read.member(root, "groups", "the placement"), "groups");
    for (size_t g = 0; g < groups.size(); ++g) {
        const std::string path = group_path(g);
        PlacementGroup group;
        const json &devices = read.array(read.member(groups[g], "devices", path), path + ".devices");
        for (size_t d = 0; d < devices.size(); ++d)
            group.devices.push_back(read.integer(devices[d], path + ".devices[" + std::to_string(d) + "]"));
        group.pipeline = read.integer(read.member(groups[g], "pipeline", path), path + ".pipeline");
        group.tensor = read.integer(read.member(groups[g], "tensor", path), path + ".tensor");
        const json &replicas =
            read.array(read.member(groups[g], "replicas", path), path + ".replicas");
        for (size_t r = 0; r < replicas.size(); ++r) {
            const std::string replica_path = path + ".replicas[" + std::to_string(r) + "]";
            Replica replica;
            const std::string name =
                read.string(read.member(replicas[r], "model", replica_path), replica_path + ".model");
            const auto id = ids.find(name);
            if (id == ids.end())
                throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                            source + ": " + replica_path + ".model \"" + name +
                                "\" is not one of the placement's models");
            replica.model = id->second;
            replica.stage_seconds = read.numbers(read.member(replicas[r], "stage_seconds", replica_path),
                                                 replica_path + ".stage_seconds");
            if (replicas[r].contains("stage_bytes"))
                replica.stage_bytes =
                    read.numbers(replicas[r]["stage_bytes"], replica_path + ".stage_bytes");
            group.replicas.push_back(std::move(replica));
        }
        placement.groups.push_back(std::move(group));
    }
    try {
        validate(placement);
    } catch (const Error &error) {
        throw Error(error.status(), source + ": " + error.what());
    }
    return placement;
}

}  // namespace pagoda::plan
