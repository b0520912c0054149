// Ranks on several machines that form a communicator, over Gloo's TCP transport: one Gloo
// context per communicator, its pairs connected through the rendezvous store named by the id
// (net_endpoint.hpp, net_store.hpp).
//
// Gloo's transport moves the bytes: every collective is a set of sends and receives on Gloo's
// unbound buffers, posted together and then waited for (direct exchanges: the groups are the
// few ranks of a tensor-parallel or pipeline group). Keeping the buffers here lets an abort end
// a wait at once. The reductions run here, in rank order on every rank (collective_reduce.hpp),
// so a layout gives the same bits whether its ranks are threads, processes of one machine or
// machines.
//
// Failures: a peer whose process ends closes its connections, which fails every wait on it at
// once; a peer that goes silent (a cut link) fails the wait after the timeout, or after about 6 s
// of unanswered TCP keepalive probes in a longer wait. Either closes this rank's connections too,
// so the other ranks learn of it. Messages name the peer by rank.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pagoda/plugin.h"

namespace gloo::rendezvous {
class Context;
}
namespace gloo::transport {
class Device;
class UnboundBuffer;
}

namespace pagoda::cpu {

class NetCommGroup {
public:
    // Joins rank `rank` of `n_ranks` through the store that `id` names, over `device` (whose
    // address is `host`); returns once every rank has connected to every other. Null (with
    // `error`) on a foreign id, a store or peer that does not answer within `timeout_ms`, or a
    // refused connection.
    static std::unique_ptr<NetCommGroup> join(const pagoda_comm_unique_id_t &id,
                                              std::shared_ptr<gloo::transport::Device> device,
                                              const std::string &host, int32_t n_ranks, int32_t rank,
                                              int64_t timeout_ms, std::string &error);
    ~NetCommGroup();
    NetCommGroup(const NetCommGroup &) = delete;
    NetCommGroup &operator=(const NetCommGroup &) = delete;

    // As the collectives table says; false (with `error`) once the group has failed or was
    // aborted, which leaves it failed for good.
    bool all_reduce(const void *send, void *recv, size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op,
                    std::string &error);
    bool all_gather(const void *send, void *recv, size_t bytes, std::string &error);
    bool reduce_scatter(const void *send, void *recv, size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op,
                        std::string &error);
    bool broadcast(const void *send, void *recv, size_t bytes, int32_t root, std::string &error);

    // Sends and receives to peers, posted together and then waited for, so that the ones of a
    // group cannot wait on each other.
    struct Transfer {
        int32_t peer = 0;
        bool outgoing = false;
        void *data = nullptr;
        size_t bytes = 0;
    };
    bool transfer(const std::vector<Transfer> &transfers, std::string &error);

    // Fails this rank's pending and later calls and closes its connections, so that the peers'
    // waits fail too.
    void abort() noexcept;
    bool aborted() const noexcept { return failed_.load(); }

private:
    NetCommGroup(std::shared_ptr<gloo::rendezvous::Context> context, std::vector<std::string> hosts);
    // Runs `work`; on an exception fails the group for good (closing its connections) with the
    // exception's message.
    template <typename Work>
    bool guarded(const char *what, std::string &error, Work &&work);
    // Posts every transfer on `slot`, then waits for each; throws naming the peer that failed.
    void run(const std::vector<Transfer> &transfers, uint64_t slot);
    uint64_t next_slot();
    // recv = every rank's part of scratch_ (rank r's `count` values at r · count), reduced in
    // rank order.
    void reduce_scratch(size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op, void *recv) const;
    std::string rank_name(int32_t rank) const;  // "rank 1 (at 10.0.0.2)"

    std::shared_ptr<gloo::rendezvous::Context> context_;
    std::vector<std::string> hosts_;  // each rank's address, for messages
    uint32_t tag_ = 0;                // collectives issued: every rank counts alike
    std::vector<unsigned char> scratch_;
    std::atomic<bool> failed_{false};
    std::mutex mutex_;  // guards the two below
    std::string failure_;  // the first failure, repeated to later calls
    std::vector<gloo::transport::UnboundBuffer *> in_flight_;  // what abort() ends
};

}  // namespace pagoda::cpu
