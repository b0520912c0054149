// A placement of several models on a cluster (AlpaServe §4.2): the devices are cut into groups;
// each group runs one parallel configuration — `pipeline` stages, each tensor-parallel over
// `tensor` devices — and holds a replica of some of the models, every replica split the same way.
// A model may have replicas in several groups. The placement is plain data: the search
// (placement_search.hpp) produces it, the simulator (simulator.hpp) scores it, and the engine will
// execute it, so it carries what the simulator needs: each replica's per-stage latency.
//
// JSON form (placement_to_json / placement_from_json):
//
//   {
//     "overhead": 0.004,                  // optional: seconds added to every request
//     "reject_late": false,               // optional, default true: reject at arrival a request
//                                         //   predicted to miss its SLO (admission.hpp)
//     "models": [                         // the models, in id order; ids index this array
//       {"name": "bert-6.7b", "slo": 2.0, // "slo": seconds, optional (the simulator's default)
//        "path": "models/bert.gguf"}      // optional: what `pagoda serve --placement` opens
//     ],
//     "groups": [
//       {
//         "devices": [0, 1],              // device ids, distinct across groups;
//                                         //   count = pipeline × tensor
//         "pipeline": 2,                  // stages
//         "tensor": 1,                    // devices per stage
//         "replicas": [
//           {"model": "bert-6.7b",        // a name from "models"
//            "stage_seconds": [0.2, 0.2], // one per stage: latency of one request on that stage
//            "stage_bytes": [6.7e9, 6.7e9]}  // optional: memory per device of each stage
//         ]
//       }
//     ]
//   }
//
// A model appears at most once per group; a model with no replica is allowed (its requests are
// all rejected).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::plan {

struct PlacedModel {
    std::string name;
    // The model's latency bound in seconds (AlpaServe's SLO = scale × single-device latency);
    // +inf: none given.
    double slo_seconds = std::numeric_limits<double>::infinity();
    // The model's file or folder, for a server to open (optional: the search and the
    // simulator need none).
    std::string path{};
};

// A replica of one model on a group: what each of the group's stages spends on one request.
struct Replica {
    uint32_t model = 0;                // index into Placement::models
    std::vector<double> stage_seconds; // size = the group's pipeline
    std::vector<double> stage_bytes;   // empty or size = pipeline; per device of the stage
};

struct PlacementGroup {
    std::vector<int32_t> devices;  // pipeline × tensor device ids, stage by stage
    int32_t pipeline = 1;
    int32_t tensor = 1;
    std::vector<Replica> replicas;

    // Memory per device of stage `stage`: the sum over replicas (0 when none gives bytes).
    double stage_bytes(size_t stage) const noexcept;
};

struct Placement {
    std::vector<PlacedModel> models;
    std::vector<PlacementGroup> groups;
    // Seconds the serving system adds to every request beyond its stages (HTTP, scheduling,
    // detokenizing), measured on the system that runs the placement; counted in every predicted
    // latency (JSON "overhead", optional, default 0).
    double overhead_seconds = 0.0;
    // Whether a request predicted to miss its SLO is rejected at arrival (JSON "reject_late",
    // optional, default true); false serves every request, a late one counting as a miss.
    bool reject_late = true;

    // Number of groups holding a replica of `model`.
    size_t replica_count(uint32_t model) const noexcept;
};

// The mesh a group runs on: its devices as `<kind>:<id>` joined by commas (kind "cpu": "cpu:2,cpu:3"),
// and its axes ("pp=2", "tp=2", "pp=2,tp=2"; "" for one device).
std::string group_device_list(const PlacementGroup &group, const std::string &kind);
std::string group_axes(const PlacementGroup &group);

// Throws Error(INVALID_ARGUMENT) naming the group, replica and field at fault: a device count
// that is not pipeline × tensor, a device used twice, a model id out of range or repeated in a
// group, a stage list of the wrong length, a negative or non-finite latency or size, a
// non-positive SLO, a repeated or empty model name.
void validate(const Placement &placement);

// The JSON form described above, on one line.
std::string placement_to_json(const Placement &placement);

// Parses and validates the JSON form. Throws Error(FORMAT) for malformed JSON (naming `source` and
// the byte) or a field of the wrong type (naming the field's path, e.g. groups[1].replicas[0].model),
// and Error(INVALID_ARGUMENT) from validate().
Placement placement_from_json(std::string_view text, const std::string &source);

}  // namespace pagoda::plan
