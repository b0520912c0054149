// The links between devices measured on a real backend: for each path a mesh can take (devices of
// one process, processes of one machine, machines), the time of a two-device all-reduce and of a
// one-way send at sizes from kilobytes to megabytes, and the latency and bandwidth fitted to them.
// The cost model then prices its all-reduces and stage-to-stage sends with these instead of a
// preset's assumed links.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pagoda::plan {

// Where two devices sit relative to each other, which decides the path their collectives take.
enum class LinkPath { WithinProcess, WithinMachine, AcrossMachines };

// "within_process", "within_machine", "across_machines".
const char *link_path_name(LinkPath path);
// Throws Error(INVALID_ARGUMENT) listing the names for another `name`.
LinkPath link_path_from_name(const std::string &name);

// The median time of one call moving `bytes` (a whole buffer: the all-reduce's, or the send's).
struct LinkSample {
    double bytes = 0;
    double seconds = 0;
};

// seconds(bytes) = messages · latency + volume · bytes / bandwidth, the cost model's terms.
struct LinkFit {
    double latency = 0;    // seconds per message
    double bandwidth = 0;  // bytes/s
    double fit_error = 0;  // mean relative error of the fit on its samples
};

// Fits a call that takes `messages` latencies and moves `volume` times its bytes over the link:
// a ring all-reduce over two devices is 2 messages and 1 volume (2(t−1) and 2(t−1)/t, t = 2), a
// send is 1 and 1. Least squares on the relative error, so that kilobyte and megabyte samples
// weigh alike; a negative intercept becomes 0 latency. Throws Error(INVALID_ARGUMENT) for fewer
// than two distinct sizes, a sample that is not positive, or times that do not grow with size.
LinkFit fit_link(const std::vector<LinkSample> &samples, double messages, double volume);

struct MeasuredLink {
    std::string backend;  // "cpu"
    LinkPath path = LinkPath::WithinMachine;
    std::string between;  // what was timed, e.g. "cpu:0@rank0 on host-a and cpu:0@rank1 on host-b"
    std::string transport;  // how the backend's collectives crossed it: "threads", "shared_memory", "network"
    std::vector<LinkSample> all_reduce_samples;  // two devices, in increasing size
    std::vector<LinkSample> send_samples;        // one way, half a round trip
    LinkFit all_reduce;  // fit_link(all_reduce_samples, 2, 1)
    LinkFit send;        // fit_link(send_samples, 1, 1)
};

// Fits both calls of `link` from its samples.
void fit_measured_link(MeasuredLink &link);

// Throws Error(INVALID_ARGUMENT) naming the field at fault: an empty backend, fewer than two
// samples of a call, a fit that is not positive and finite.
void validate(const MeasuredLink &link);

// One link as the cost file's "links" array holds it:
// {"backend", "path", "between", "transport",
//  "all_reduce": {"latency", "bandwidth", "fit_error", "samples": [[bytes, seconds], ...]},
//  "send": {...}}.
nlohmann::json measured_link_to_json(const MeasuredLink &link);
// Reads that object back; throws Error(FORMAT) naming `where` and the field.
MeasuredLink measured_link_from_json(const nlohmann::json &j, const std::string &where);
// `links` as a JSON array of those objects (text).
std::string measured_links_json(const std::vector<MeasuredLink> &links);

// The links of `backend` among `links` that price a planner's node and the network between nodes:
// within a node, the measured path between processes of one machine when there is one (the
// slower of a machine's two paths, so plans over processes are not optimistic), else between
// devices of one process; across nodes, between machines. Null where nothing was measured.
struct NodeLinks {
    const MeasuredLink *within_node = nullptr;
    const MeasuredLink *across_nodes = nullptr;
};
NodeLinks node_links(const std::vector<MeasuredLink> &links, const std::string &backend);

}  // namespace pagoda::plan
