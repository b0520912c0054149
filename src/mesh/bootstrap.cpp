#include "mesh/bootstrap.hpp"

#include <cstring>
#include <string>

#include "common/error.hpp"

namespace pagoda::mesh {

void Bootstrap::all_gather(const void *mine, void *out, size_t bytes) {
    auto *slots = static_cast<unsigned char *>(out);
    for (int32_t r = 0; r < size(); ++r) {
        unsigned char *slot = slots + static_cast<size_t>(r) * bytes;
        // memmove: a caller may gather in place, with `mine` already in its own slot.
        if (r == rank() && bytes > 0) std::memmove(slot, mine, bytes);
        broadcast(slot, bytes, r);
    }
}

namespace {

class HostBootstrap final : public Bootstrap {
public:
    HostBootstrap(HostBroadcast host_broadcast, void *user, int32_t rank, int32_t size)
        : broadcast_(host_broadcast), user_(user), rank_(rank), size_(size) {}

    int32_t rank() const noexcept override { return rank_; }
    int32_t size() const noexcept override { return size_; }

    void broadcast(void *data, size_t bytes, int32_t root) override {
        if (root < 0 || root >= size_)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "bootstrap broadcast from rank " + std::to_string(root) +
                                                         ": a world of " + std::to_string(size_) +
                                                         " ranks has no such rank");
        const pagoda_status_t status = broadcast_(user_, data, bytes, root);
        if (status != PAGODA_OK)
            throw Error(PAGODA_ERR_BACKEND, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                                ": the host's bootstrap broadcast failed (" + std::to_string(bytes) +
                                                " bytes from rank " + std::to_string(root) +
                                                "): " + status_name(status));
    }

private:
    HostBroadcast broadcast_;
    void *user_;
    int32_t rank_;
    int32_t size_;
};

}  // namespace

std::unique_ptr<Bootstrap> host_bootstrap(HostBroadcast broadcast, void *user, int32_t rank, int32_t size) {
    if (broadcast == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "host bootstrap: the broadcast function is NULL");
    if (size < 1 || rank < 0 || rank >= size)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "host bootstrap: rank " + std::to_string(rank) +
                                                     " is not a rank of a world of " + std::to_string(size));
    return std::make_unique<HostBootstrap>(broadcast, user, rank, size);
}

}  // namespace pagoda::mesh
