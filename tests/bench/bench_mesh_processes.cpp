// pagoda-bench-mesh's cases over two processes (--processes): decode at batch 16 and one
// L-token prefill (110m shape, f32) on tp=2 over this process's cpu:1 and the second rank's,
//   - with the collectives through shared memory (the path between processes of one machine),
//   - through Gloo over TCP (the path between machines: forced here with the world's
//     network_collectives, over loopback when both ranks share a network namespace, over a veth
//     pair when a script started them in two),
// against tp=2 over cpu:1-2 in this process and the whole model on cpu:0, all taking turns. Then
// the all-reduces alone, at the decode and the prefill sizes, on both paths, beside the time the
// planner's cost model predicts for them: with the links the link profiler measures
// (engine/link_profiler: both paths between the same two devices, 4 KiB to 8 MiB), in turns with
// those timings so that each repeat pairs a prediction with a timing, and with the "cpu"
// preset's assumed links, within and across nodes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_mesh_common.hpp"
#include "engine/link_profiler.hpp"
#include "mesh/communicator.hpp"
#include "mesh/mesh.hpp"
#include "mesh/process_group.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_spec.hpp"
#include "plan/model_shape.hpp"
#include "runtime/device.hpp"

namespace pagoda::bench_mesh {

namespace {

// The all-reduce of `floats` f32 values on a communicator of both ranks' cpu:1, timed `calls`
// times per repeat (median of a repeat's calls is its figure, in seconds). The values live in
// the device's memory, as the executor's activations do (the CPU backend gives large buffers
// huge pages), and are zeros, so that the sums stay finite however often they run.
struct AllReduceRun {
    std::shared_ptr<const runtime::Device> device;  // outlives the stream and the communicator
    std::unique_ptr<runtime::Stream> stream;
    std::unique_ptr<mesh::Communicator> comm;
    runtime::DeviceBuffer data;
    size_t floats;

    AllReduceRun(const mesh::World &world, size_t count)
        : device(mesh::Mesh("cpu:1", "").devices().front()), floats(count) {
        pagoda_comm_options_t options = mesh::world_comm_options(world);
        pagoda_comm_unique_id_t id{};
        if (world.rank() == 0) id = mesh::new_comm_id(*device, &options);
        world.bootstrap()->broadcast(&id, sizeof id, 0);
        stream = std::make_unique<runtime::Stream>(*device);
        data = runtime::DeviceBuffer(*device, floats * sizeof(float), "the bench's all-reduce");
        stream->memset(data.get(), 0, data.bytes());
        stream->synchronize();
        comm = std::make_unique<mesh::Communicator>(*device, id, world.size(), world.rank(), "bench", &options);
    }
    ~AllReduceRun() {
        comm.reset();
        data.reset();
        stream.reset();
    }
    double time(int32_t calls) {
        std::vector<double> t;
        for (int32_t i = 0; i < calls; ++i) {
            const double start = now();
            comm->all_reduce_sum(*stream, data.get(), floats, PAGODA_DTYPE_F32);
            stream->synchronize();
            t.push_back(now() - start);
        }
        return spread(t).median;
    }
};

const char *scope_name(const mesh::World &world) {
    return mesh::world_comm_options(world).scope == PAGODA_COMM_SCOPE_NETWORK ? "gloo_tcp" : "shared_memory";
}

// Rank 1 makes the same calls on its own share of the meshes, in the same order, so that its
// runs pair with rank 0's; it prints nothing.
void bench_processes(bool quick, int64_t prompt, int32_t repeats, int32_t steps,
                     const std::shared_ptr<const mesh::World> &shm_world,
                     const std::shared_ptr<const mesh::World> &net_world) {
    const bench::RandomModelShape shape = bench::random_model_shape(quick ? "tiny" : "110m");
    auto model = random_model(shape);
    const int32_t vocab = int32_t(shape.vocab);
    const bool leads = shm_world->rank() == 0;
    const int64_t batch = 16, context = quick ? 16 : 64;
    const int64_t capacity = prompt + batch * (context + steps + 16) + 1024;  // the decodes, then seq 1 grown
    MeshRun over_shm(model, "cpu:1", "tp=2", {}, capacity, {}, shm_world);
    MeshRun over_net(model, "cpu:1", "tp=2", {}, capacity, {}, net_world);
    std::unique_ptr<MeshRun> inside, one;
    if (leads) {
        inside = std::make_unique<MeshRun>(model, "cpu:1-2", "tp=2", exec::PipelineOptions{}, capacity);
        one = std::make_unique<MeshRun>(model, "cpu:0", "", exec::PipelineOptions{}, capacity);
    }
    std::vector<MeshRun *> runs{&over_shm, &over_net};
    if (leads) runs.insert(runs.end(), {inside.get(), one.get()});
    const auto decode = decode_rates(runs, vocab, batch, context, steps, repeats);
    std::vector<exec::ForwardBatch> prefills;
    for (MeshRun *r : runs) prefills.push_back(r->batch({prompt}, {0}, vocab));
    std::vector<std::function<double()>> fns;
    for (size_t i = 0; i < runs.size(); ++i) fns.push_back([&, i] { return runs[i]->time(prefills[i], vocab); });
    const auto prefill = interleave(fns, repeats);

    // The all-reduces alone: a decode step's (batch × hidden) and a prefill's (prompt × hidden).
    const size_t decode_floats = size_t(batch * shape.hidden), prefill_floats = size_t(prompt * shape.hidden);
    AllReduceRun shm_small(*shm_world, decode_floats), net_small(*net_world, decode_floats);
    AllReduceRun shm_large(*shm_world, prefill_floats), net_large(*net_world, prefill_floats);
    const int32_t small_calls = quick ? 5 : 100, large_calls = quick ? 1 : 5;
    // The links as `pagoda profile --links` measures them, on the same devices, taking turns
    // with the all-reduces timed alone, so that each repeat's prediction pairs with that
    // repeat's timings. The network path stands for the link between machines, whichever
    // namespaces the ranks are in.
    engine::LinkProfileOptions link_options;
    link_options.max_bytes = std::max<int64_t>(link_options.max_bytes, int64_t(prefill_floats) * 4);
    if (quick) link_options.repeats = 3;
    const auto device = mesh::Mesh("cpu:1", "").devices().front();
    std::vector<plan::MeasuredLink> within, across;  // per repeat
    auto profile = [&](const mesh::World &world, plan::LinkPath path, std::vector<plan::MeasuredLink> &into) {
        into.push_back(
            engine::time_process_link(world, 0, 1, *device, mesh::world_comm_options(world), link_options));
        into.back().path = path;
        return 0.0;
    };
    const auto reduces = interleave({[&] { return shm_small.time(small_calls); },
                                     [&] { return net_small.time(small_calls); },
                                     [&] { return shm_large.time(large_calls); },
                                     [&] { return net_large.time(large_calls); },
                                     [&] { return profile(*shm_world, plan::LinkPath::WithinMachine, within); },
                                     [&] { return profile(*net_world, plan::LinkPath::AcrossMachines, across); }},
                                    repeats);
    // interleave's first round warms up and is not kept: nor are its links.
    within.erase(within.begin());
    across.erase(across.begin());
    if (!leads) return;
    std::printf("{\"name\":\"decode_tp_processes\",\"model\":\"%s\",\"batch\":%lld,\"context\":%lld,\"steps\":%d,"
                "\"repeats\":%d,\"network_path\":\"%s\",%s,%s,%s,%s,%s,%s,%s}\n",
                shape.name.c_str(), (long long)batch, (long long)context, steps, repeats, scope_name(*net_world),
                spread_json("tp2_processes_tokens_per_second", spread(decode[0])).c_str(),
                spread_json("tp2_processes_gloo_tokens_per_second", spread(decode[1])).c_str(),
                spread_json("tp2_one_process_tokens_per_second", spread(decode[2])).c_str(),
                spread_json("cpu0_tokens_per_second", spread(decode[3])).c_str(),
                spread_json("gloo_over_shared_memory", spread(ratios(decode[1], decode[0]))).c_str(),
                spread_json("processes_over_one_process", spread(ratios(decode[0], decode[2]))).c_str(),
                spread_json("processes_over_cpu0", spread(ratios(decode[0], decode[3]))).c_str());
    std::printf("{\"name\":\"prefill_tp_processes\",\"model\":\"%s\",\"prompt\":%lld,\"repeats\":%d,"
                "\"network_path\":\"%s\",%s,%s,%s,%s,%s,%s,%s}\n",
                shape.name.c_str(), (long long)prompt, repeats, scope_name(*net_world),
                spread_json("tp2_processes_seconds", spread(prefill[0])).c_str(),
                spread_json("tp2_processes_gloo_seconds", spread(prefill[1])).c_str(),
                spread_json("tp2_one_process_seconds", spread(prefill[2])).c_str(),
                spread_json("cpu0_seconds", spread(prefill[3])).c_str(),
                spread_json("gloo_speed_over_shared_memory", spread(ratios(prefill[0], prefill[1]))).c_str(),
                spread_json("processes_speed_over_one_process", spread(ratios(prefill[2], prefill[0]))).c_str(),
                spread_json("processes_speed_over_cpu0", spread(ratios(prefill[3], prefill[0]))).c_str());
    // What the planner predicts for the same all-reduces: within a node for shared memory,
    // across nodes for the network; with each repeat's measured links, and with the preset's.
    const plan::ModelShape model_shape = plan::model_shape(model->config());
    const plan::CostModel assumed(model_shape, plan::device_preset("cpu"));
    std::vector<plan::CostModel> measured;  // per repeat
    for (size_t r = 0; r < within.size(); ++r) {
        measured.emplace_back(model_shape, plan::device_preset("cpu"));
        measured.back().use_measured_links({within[r], across[r]});
    }
    for (const std::vector<plan::MeasuredLink> *links : {&within, &across}) {
        std::vector<double> latency, bandwidth, error;
        for (const plan::MeasuredLink &l : *links) {
            latency.push_back(l.all_reduce.latency);
            bandwidth.push_back(l.all_reduce.bandwidth);
            error.push_back(l.all_reduce.fit_error);
        }
        std::printf("{\"name\":\"link_profile\",\"path\":\"%s\",\"transport\":\"%s\",\"repeats\":%d,%s,%s,%s}\n",
                    plan::link_path_name(links->front().path), links->front().transport.c_str(), repeats,
                    spread_json("all_reduce_latency_seconds", spread(latency)).c_str(),
                    spread_json("all_reduce_bandwidth", spread(bandwidth)).c_str(),
                    spread_json("all_reduce_fit_error", spread(error)).c_str());
    }
    const char *sizes[2] = {"decode", "prefill"};
    const size_t floats[2] = {decode_floats, prefill_floats};
    for (int s = 0; s < 2; ++s) {
        const double bytes = double(floats[s]) * 4.0;
        std::vector<double> within_s, across_s;
        for (const plan::CostModel &m : measured) {
            within_s.push_back(m.all_reduce_seconds(bytes, 2, false));
            across_s.push_back(m.all_reduce_seconds(bytes, 2, true));
        }
        const std::vector<double> &shm = reduces[size_t(2 * s)], &net = reduces[size_t(2 * s + 1)];
        const double within_preset = assumed.all_reduce_seconds(bytes, 2, false);
        const double across_preset = assumed.all_reduce_seconds(bytes, 2, true);
        // Dividing by a constant keeps the order, so the ratio's spread is the timing's, scaled.
        auto over_preset = [](const std::vector<double> &t, double preset) {
            const Spread timed = spread(t);
            return Spread{timed.median / preset, timed.min / preset, timed.max / preset};
        };
        std::printf("{\"name\":\"all_reduce_tp2_processes\",\"size\":\"%s\",\"bytes\":%.0f,\"repeats\":%d,%s,%s,%s,%s,"
                    "%s,%s,\"preset_shared_memory_seconds\":%.6g,\"preset_network_seconds\":%.6g,%s,%s}\n",
                    sizes[s], bytes, repeats, spread_json("shared_memory_seconds", spread(shm)).c_str(),
                    spread_json("gloo_seconds", spread(net)).c_str(),
                    spread_json("predicted_shared_memory_seconds", spread(within_s)).c_str(),
                    spread_json("predicted_network_seconds", spread(across_s)).c_str(),
                    spread_json("measured_over_predicted_shared_memory", spread(ratios(shm, within_s))).c_str(),
                    spread_json("measured_over_predicted_network", spread(ratios(net, across_s))).c_str(),
                    within_preset, across_preset,
                    spread_json("measured_over_preset_shared_memory", over_preset(shm, within_preset)).c_str(),
                    spread_json("measured_over_preset_network", over_preset(net, across_preset)).c_str());
    }
    std::fflush(stdout);
}

// A loopback port the kernel has just picked for nobody (it may be taken again before rank 0
// listens; then the rendezvous fails, naming it).
int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
    if (fd >= 0) close(fd);
    if (!ok) throw std::runtime_error("no free loopback port");
    return ntohs(a.sin_port);
}

// Starts rank 1: this program again, with the same settings.
pid_t start_second_rank(const char *self, const std::string &rendezvous, std::vector<std::string> args) {
    args.insert(args.end(), {"--processes", "--world-rank", "1", "--rendezvous", rendezvous});
    std::vector<char *> argv{const_cast<char *>(self)};
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    return pid;
}

// The two worlds of both ranks: one met at `rendezvous` for shared memory, one at the next port
// whose collectives all go over the network.
std::pair<std::shared_ptr<const mesh::World>, std::shared_ptr<const mesh::World>> worlds(int32_t rank,
                                                                                       const std::string &rendezvous) {
    mesh::WorldOptions w;
    w.rank = rank;
    w.size = 2;
    w.rendezvous = rendezvous;
    auto shm = std::make_shared<const mesh::World>(w);
    const size_t colon = rendezvous.rfind(':');
    w.rendezvous = rendezvous.substr(0, colon + 1) + std::to_string(std::stoi(rendezvous.substr(colon + 1)) + 1);
    w.network_collectives = true;
    return {shm, std::make_shared<const mesh::World>(w)};
}

}  // namespace

int bench_processes_main(const char *self, bool quick, int64_t prompt, int32_t repeats, int32_t steps,
                         int32_t world_rank, const std::string &rendezvous, std::vector<std::string> forwarded) {
    if (!rendezvous.empty()) {  // both ranks started by someone else
        auto [shm, net] = worlds(world_rank, rendezvous);
        bench_processes(quick, prompt, repeats, steps, shm, net);
        return 0;
    }
    // The port after it must be free too (the network world's); it seldom is not.
    const std::string address = "127.0.0.1:" + std::to_string(free_loopback_port());
    const pid_t second = start_second_rank(self, address, std::move(forwarded));
    try {
        auto [shm, net] = worlds(0, address);
        bench_processes(quick, prompt, repeats, steps, shm, net);
    } catch (...) {
        kill(second, SIGKILL);
        waitpid(second, nullptr, 0);
        throw;
    }
    int status = 0;
    waitpid(second, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "pagoda-bench-mesh: the second rank ended with status 0x%x\n", status);
        return 1;
    }
    return 0;
}

}  // namespace pagoda::bench_mesh
