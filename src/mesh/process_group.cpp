#include "mesh/process_group.hpp"

#include "common/error.hpp"

namespace pagoda::mesh {

namespace {

// "As long as the peers live": a week, short enough that the backend's deadline arithmetic in
// nanoseconds cannot overflow.
constexpr int64_t kIdleTimeoutMs = int64_t(7) * 24 * 3600 * 1000;

}  // namespace

pagoda_comm_options_t world_comm_options(const World &world) {
    pagoda_comm_options_t o{};
    o.struct_size = sizeof o;
    // Shared memory where every rank can reach it, the network otherwise.
    o.scope = world.machine_count() > 1 || world.network_collectives() ? PAGODA_COMM_SCOPE_NETWORK
                                                                        : PAGODA_COMM_SCOPE_HOST;
    o.timeout_ms = world.timeout_ms();
    return o;
}

ProcessGroup::ProcessGroup(const runtime::Device &device, const World &world) {
    pagoda_comm_options_t options = world_comm_options(world);
    options.timeout_ms = kIdleTimeoutMs;
    pagoda_comm_unique_id_t id{};
    if (world.rank() == 0) id = new_comm_id(device, &options);
    world.bootstrap()->broadcast(&id, sizeof id, 0);
    stream_ = std::make_unique<runtime::Stream>(device);
    comm_ = std::make_unique<Communicator>(device, id, world.size(), world.rank(), "process group", &options);
}

ProcessGroup::~ProcessGroup() {
    comm_.reset();  // before the stream it ran on
    stream_.reset();
}

void ProcessGroup::broadcast_bytes(std::vector<unsigned char> &bytes, int32_t root) const {
    uint64_t count = bytes.size();
    comm_->broadcast(*stream_, &count, 1, PAGODA_DTYPE_I64, root);
    if (count > (uint64_t(1) << 32))
        throw Error(PAGODA_ERR_FORMAT, "rank " + std::to_string(root) + " broadcast " + std::to_string(count) +
                                           " bytes of control data; more than 4 GiB is a fault");
    bytes.resize(size_t(count));
    if (count > 0) comm_->broadcast(*stream_, bytes.data(), size_t(count), PAGODA_DTYPE_U8, root);
}

void ProcessGroup::broadcast(float *data, size_t count, int32_t root) const {
    comm_->broadcast(*stream_, data, count, PAGODA_DTYPE_F32, root);
}

}  // namespace pagoda::mesh
