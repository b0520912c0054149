#include "mesh/communicator.hpp"

#include <algorithm>
#include <cstddef>

#include "common/error.hpp"

namespace pagoda::mesh {

namespace {

const pagoda_backend_collectives_t &collectives_of(const runtime::Device &device) {
    const pagoda_backend_collectives_t *c = device.iface().collectives;
    if (c == nullptr)
        throw Error(PAGODA_ERR_UNSUPPORTED, device.name() + ": its backend has no collectives, so it cannot join a "
                                                            "multi-device mesh");
    return *c;
}

// The collectives of `device` when they span processes (ABI 1.7's slots).
const pagoda_backend_collectives_t &extended_collectives_of(const runtime::Device &device) {
    const pagoda_backend_collectives_t &c = collectives_of(device);
    if (c.struct_size < offsetof(pagoda_backend_collectives_t, comm_create_ex) + sizeof c.comm_create_ex ||
        c.get_unique_id_ex == nullptr || c.comm_create_ex == nullptr)
        throw Error(PAGODA_ERR_UNSUPPORTED, device.name() + ": its plugin predates communicators across processes "
                                                            "(plugin ABI 1.7): rebuild it");
    return c;
}

}  // namespace

pagoda_comm_unique_id_t new_comm_id(const runtime::Device &device, const pagoda_comm_options_t *options) {
    pagoda_comm_unique_id_t id{};
    if (options == nullptr)
        device.check(collectives_of(device).get_unique_id(device.iface().self, &id), "making a communicator id");
    else
        device.check(extended_collectives_of(device).get_unique_id_ex(device.iface().self, options, &id),
                     "making a communicator id");
    return id;
}

Communicator::Communicator(const runtime::Device &device, const pagoda_comm_unique_id_t &id, int32_t size,
                           int32_t rank, std::string name, const pagoda_comm_options_t *options)
    : device_(device), coll_(collectives_of(device)), size_(size), rank_(rank), name_(std::move(name)) {
    clear_last_error();
    const pagoda_status_t s =
        options == nullptr
            ? coll_.comm_create(device.iface().self, device.index(), &id, size, rank, &comm_)
            : extended_collectives_of(device).comm_create_ex(device.iface().self, device.index(), &id, size, rank,
                                                             options, &comm_);
    if (s != PAGODA_OK) failed("joining");
}

Communicator::~Communicator() {
    if (comm_ != nullptr) coll_.comm_destroy(device_.iface().self, comm_);
}

void Communicator::failed(const char *call) const {
    const std::string reason = last_error()[0] != '\0' ? last_error() : "no reason given";
    throw Error(PAGODA_ERR_BACKEND, device_.name() + ": " + call + " the " + name_ + " communicator (rank " +
                                        std::to_string(rank_) + " of " + std::to_string(size_) + "): " + reason);
}

void Communicator::all_reduce_sum(const runtime::Stream &stream, void *buf, size_t count,
                                  pagoda_dtype_t dtype) const {
    if (coll_.all_reduce(device_.iface().self, comm_, stream.get(), buf, buf, count, dtype, PAGODA_REDUCE_SUM) !=
        PAGODA_OK)
        failed("all-reducing over");
}

void Communicator::all_gather(const runtime::Stream &stream, const void *send, void *recv, size_t count,
                              pagoda_dtype_t dtype) const {
    if (coll_.all_gather(device_.iface().self, comm_, stream.get(), send, recv, count, dtype) != PAGODA_OK)
        failed("all-gathering over");
}

void Communicator::broadcast(const runtime::Stream &stream, void *buf, size_t count, pagoda_dtype_t dtype,
                             int32_t root) const {
    if (coll_.broadcast(device_.iface().self, comm_, stream.get(), buf, buf, count, dtype, root) != PAGODA_OK)
        failed("broadcasting over");
}

void Communicator::send(const runtime::Stream &stream, const void *buf, size_t count, pagoda_dtype_t dtype,
                        int32_t peer) const {
    if (coll_.send(device_.iface().self, comm_, stream.get(), buf, count, dtype, peer) != PAGODA_OK)
        failed("sending over");
}

void Communicator::recv(const runtime::Stream &stream, void *buf, size_t count, pagoda_dtype_t dtype,
                        int32_t peer) const {
    if (coll_.recv(device_.iface().self, comm_, stream.get(), buf, count, dtype, peer) != PAGODA_OK)
        failed("receiving over");
}

void Communicator::abort() const noexcept {
    if (comm_ != nullptr) (void)coll_.comm_abort(device_.iface().self, comm_);
}

void CommSet::add(const Communicator *comm) {
    std::lock_guard lock(mutex_);
    comms_.push_back(comm);
    if (aborted_) comm->abort();
}

void CommSet::remove(const Communicator *comm) {
    std::lock_guard lock(mutex_);
    comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
}

void CommSet::abort_all() noexcept {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    for (const Communicator *c : comms_) c->abort();
}

bool CommSet::aborted() const {
    std::lock_guard lock(mutex_);
    return aborted_;
}

void CommSet::reset() {
    std::lock_guard lock(mutex_);
    aborted_ = false;
}

}  // namespace pagoda::mesh
