#include "engine/link_profiler.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "mesh/communicator.hpp"
#include "mesh/process_group.hpp"

namespace pagoda::engine {

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Traffic before timing: more than the CPU backend's shared-memory staging and rings hold, in
// at most so many calls (tiny sizes touch few pages anyway).
constexpr int64_t kWarmBytes = int64_t(32) << 20, kMaxWarmCalls = 256;
// Calls timed together per size and round.
constexpr int kCallsTimed = 3;

// Median seconds per size, as pair rank 0 saw them: the all-reduce's, then one send's.
struct PairTimes {
    std::vector<double> all_reduce, send;
};

// One side of a timed pair: `comm` is of two ranks; both sides make the same calls.
PairTimes time_pair(const mesh::Communicator &comm, const runtime::Device &device, const LinkProfileOptions &o) {
    const std::vector<int64_t> sizes = link_sizes(o);
    runtime::Stream stream(device);
    runtime::DeviceBuffer buffer(device, size_t(sizes.back()), "the link profile's buffer");
    // Zeros stay zeros under the sums, whatever the count of calls.
    stream.memset(buffer.get(), 0, buffer.bytes());
    stream.synchronize();
    const int32_t peer = 1 - comm.rank();
    auto all_reduce = [&](size_t floats) { comm.all_reduce_sum(stream, buffer.get(), floats, PAGODA_DTYPE_F32); };
    // A ping-pong: rank 0 sends and waits for the answer, so half its time is one send.
    auto ping_pong = [&](size_t floats) {
        if (comm.rank() == 0) {
            comm.send(stream, buffer.get(), floats, PAGODA_DTYPE_F32, peer);
            comm.recv(stream, buffer.get(), floats, PAGODA_DTYPE_F32, peer);
        } else {
            comm.recv(stream, buffer.get(), floats, PAGODA_DTYPE_F32, peer);
            comm.send(stream, buffer.get(), floats, PAGODA_DTYPE_F32, peer);
        }
    };
    // The transport's own buffers take a page fault for each page first touched (the CPU
    // backend's shared memory is mapped lazily, its rings some MiB long): the largest calls,
    // until kWarmBytes have gone each way, touch them all, so that every size is timed in the
    // steady state a serving mesh reaches after its first steps.
    for (int64_t moved = 0, calls = 0; moved < kWarmBytes && calls < kMaxWarmCalls; moved += sizes.back(), ++calls) {
        all_reduce(size_t(sizes.back() / 4));
        ping_pong(size_t(sizes.back() / 4));
        stream.synchronize();
    }
    // Rounds over every size, so that each size is timed across the whole run: the time of a
    // small call swings with where the scheduler put the two ranks (on a busy machine, a peer on
    // the same core costs a context switch per wait), and every size should see the same mix.
    // Within a round a size's first call is untimed: it brings the ranks into step after the
    // previous size (whose last bytes one rank may still be copying), as back-to-back calls of a
    // serving step are; the next kCallsTimed give the round's time per call.
    auto seconds = [&](auto &&call) {
        call();
        stream.synchronize();
        const double start = now();
        for (int i = 0; i < kCallsTimed; ++i) call();
        stream.synchronize();
        return (now() - start) / kCallsTimed;
    };
    std::vector<std::vector<double>> reduces(sizes.size()), sends(sizes.size());
    for (int32_t round = 0; round < o.warmup + o.repeats; ++round)
        for (size_t i = sizes.size(); i-- > 0;) {  // largest first: a small call after a large one
                                                    // still starts out of step, a large one barely cares
            const size_t floats = size_t(sizes[i] / 4);
            const double reduce = seconds([&] { all_reduce(floats); });
            const double send = 0.5 * seconds([&] { ping_pong(floats); });
            if (round < o.warmup) continue;
            reduces[i].push_back(reduce);
            sends[i].push_back(send);
        }
    PairTimes out;
    for (size_t i = 0; i < sizes.size(); ++i) {
        out.all_reduce.push_back(median(reduces[i]));
        out.send.push_back(median(sends[i]));
    }
    return out;
}

std::string backend_of(const runtime::Device &device) {
    const std::string &name = device.name();
    return name.substr(0, name.find(':'));
}

plan::MeasuredLink make_link(const runtime::Device &device, plan::LinkPath path, std::string between,
                             std::string transport, const PairTimes &times, const LinkProfileOptions &o) {
    plan::MeasuredLink link;
    link.backend = backend_of(device);
    link.path = path;
    link.between = std::move(between);
    link.transport = std::move(transport);
    const std::vector<int64_t> sizes = link_sizes(o);
    for (size_t i = 0; i < sizes.size(); ++i) {
        link.all_reduce_samples.push_back({double(sizes[i]), times.all_reduce[i]});
        link.send_samples.push_back({double(sizes[i]), times.send[i]});
    }
    try {
        plan::fit_measured_link(link);
    } catch (const Error &e) {
        throw Error(PAGODA_ERR_BACKEND, "timing the link between " + link.between + ": " + e.what());
    }
    return link;
}

const char *transport_name(const pagoda_comm_options_t &options) {
    return options.scope == PAGODA_COMM_SCOPE_NETWORK ? "network" : "shared_memory";
}

// Rank `root`'s times on every rank of `world` (a fixed count of doubles: the sizes are agreed).
void share_times(const mesh::World &world, PairTimes &times, size_t sizes, int32_t root) {
    if (world.size() < 2) return;
    std::vector<double> flat(2 * sizes);
    if (world.rank() == root)
        for (size_t i = 0; i < sizes; ++i) {
            flat[i] = times.all_reduce[i];
            flat[sizes + i] = times.send[i];
        }
    world.bootstrap()->broadcast(flat.data(), flat.size() * sizeof(double), root);
    times.all_reduce.assign(flat.begin(), flat.begin() + std::ptrdiff_t(sizes));
    times.send.assign(flat.begin() + std::ptrdiff_t(sizes), flat.end());
}

std::string rank_device(const runtime::Device &device, const mesh::World &world, int32_t rank) {
    const std::string host = world.host_of(rank);
    return device.name() + "@rank" + std::to_string(rank) + (host.empty() ? "" : " on " + host);
}

// The pair of this process's devices, each joined on a thread of its own (the backend's
// in-process ranks are threads): `first`'s times.
PairTimes time_device_pair(const runtime::Device &first, const runtime::Device &second, const LinkProfileOptions &o) {
    const pagoda_comm_unique_id_t id = mesh::new_comm_id(first);
    const runtime::Device *devices[2] = {&first, &second};
    PairTimes times[2];
    std::exception_ptr errors[2];
    std::thread threads[2];
    for (int r = 0; r < 2; ++r)
        threads[r] = std::thread([&, r] {
            try {
                const mesh::Communicator comm(*devices[r], id, 2, r, "link profile");
                times[r] = time_pair(comm, *devices[r], o);
            } catch (...) {
                errors[r] = std::current_exception();
            }
        });
    for (std::thread &t : threads) t.join();
    for (const std::exception_ptr &e : errors)
        if (e) std::rethrow_exception(e);
    return times[0];
}

}  // namespace

void validate(const LinkProfileOptions &o) {
    if (o.min_bytes <= 0 || o.min_bytes % 4 != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "min_bytes is " + std::to_string(o.min_bytes) + ", want a positive multiple of 4 (f32 values)");
    if (o.max_bytes < 2 * o.min_bytes || o.max_bytes > (int64_t(1) << 32))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "max_bytes is " + std::to_string(o.max_bytes) +
                                                     ", want from twice min_bytes (two sizes to fit) to 4 GiB");
    if (o.repeats < 1 || o.repeats > 10000)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "repeats is " + std::to_string(o.repeats) + ", want 1 to 10000");
    if (o.warmup < 0) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "warmup is " + std::to_string(o.warmup) + ", want >= 0");
}

std::vector<int64_t> link_sizes(const LinkProfileOptions &o) {
    validate(o);
    std::vector<int64_t> sizes;
    for (int64_t b = o.min_bytes; b <= o.max_bytes; b *= 2) sizes.push_back(b);
    return sizes;
}

plan::MeasuredLink time_device_link(const runtime::Device &first, const runtime::Device &second,
                                    const LinkProfileOptions &o) {
    return make_link(first, plan::LinkPath::WithinProcess, first.name() + " and " + second.name(), "threads",
                     time_device_pair(first, second, o), o);
}

plan::MeasuredLink time_process_link(const mesh::World &world, int32_t first, int32_t second,
                                     const runtime::Device &device, const pagoda_comm_options_t &comm_options,
                                     const LinkProfileOptions &o) {
    validate(o);
    if (first == second || first < 0 || second < 0 || first >= world.size() || second >= world.size())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "a link between ranks " + std::to_string(first) + " and " +
                                                     std::to_string(second) + " of " + std::to_string(world.size()));
    // Rank 0 makes the id and hands it out, as it does for a mesh's groups.
    pagoda_comm_unique_id_t id{};
    if (world.rank() == 0) id = mesh::new_comm_id(device, &comm_options);
    world.bootstrap()->broadcast(&id, sizeof id, 0);
    PairTimes times;
    const int32_t me = world.rank() == first ? 0 : world.rank() == second ? 1 : -1;
    if (me >= 0) {
        const mesh::Communicator comm(device, id, 2, me, "link profile", &comm_options);
        times = time_pair(comm, device, o);
    }
    share_times(world, times, link_sizes(o).size(), first);
    const plan::LinkPath path =
        world.machine_of(first) == world.machine_of(second) ? plan::LinkPath::WithinMachine : plan::LinkPath::AcrossMachines;
    return make_link(device, path, rank_device(device, world, first) + " and " + rank_device(device, world, second),
                     transport_name(comm_options), times, o);
}

std::vector<plan::MeasuredLink> profile_links(const mesh::Mesh &mesh, const LinkProfileOptions &o) {
    validate(o);
    const auto &devices = mesh.devices();
    const mesh::World *world = mesh.spans_processes() ? mesh.world().get() : nullptr;
    if (devices.size() < 2 && world == nullptr)
        throw Error(PAGODA_ERR_UNSUPPORTED, "a mesh of one device in one process has no link to time: give it two "
                                            "devices, or launch it over several processes");
    std::vector<plan::MeasuredLink> links;
    if (devices.size() >= 2) {
        // Every process's devices are alike: rank 0 times its own and tells the others.
        PairTimes times;
        if (world == nullptr || world->rank() == 0) times = time_device_pair(*devices[0], *devices[1], o);
        if (world != nullptr) share_times(*world, times, link_sizes(o).size(), 0);
        links.push_back(make_link(*devices[0], plan::LinkPath::WithinProcess,
                                  devices[0]->name() + " and " + devices[1]->name() + " of one process", "threads",
                                  times, o));
    }
    if (world == nullptr) return links;
    const pagoda_comm_options_t across = mesh::world_comm_options(*world);
    pagoda_comm_options_t within = across;
    if (!world->network_collectives()) within.scope = PAGODA_COMM_SCOPE_HOST;
    // The lowest pair of ranks on one machine, and rank 0 with the first rank on another.
    int32_t same = -1, same_peer = -1, other = -1;
    for (int32_t a = 0; a < world->size() && same < 0; ++a)
        for (int32_t b = a + 1; b < world->size(); ++b)
            if (world->machine_of(a) == world->machine_of(b)) {
                same = a;
                same_peer = b;
                break;
            }
    for (int32_t r = 1; r < world->size() && other < 0; ++r)
        if (world->machine_of(r) != world->machine_of(0)) other = r;
    if (same >= 0) links.push_back(time_process_link(*world, same, same_peer, *devices[0], within, o));
    if (other >= 0) links.push_back(time_process_link(*world, 0, other, *devices[0], across, o));
    return links;
}

}  // namespace pagoda::engine
