// One rank's communicator in a group of mesh devices, made from its backend's collectives
// (plugin.h), with the calls the executor makes: in-place all-reduce, send and receive. Every
// failure becomes an Error naming the group, the call and the backend's message.
//
// A failure on one device must not leave the others waiting forever in a collective: CommSet
// holds every communicator of a mesh so that whoever sees a failure aborts them all, and the
// waiting ranks then fail too (NCCL's ncclCommAbort, the CPU backend's group abort).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "pagoda/backend.h"
#include "runtime/device.hpp"

namespace pagoda::mesh {

// A new id for one group, made by one rank (any thread) and handed to every rank. With
// `options`, for ranks where its scope says (processes of one machine, say); NULL = this process.
pagoda_comm_unique_id_t new_comm_id(const runtime::Device &device, const pagoda_comm_options_t *options = nullptr);

class Communicator {
public:
    // Joins as rank `rank` of `size` on `device`; blocks until every rank has joined. Call it on
    // the thread that will use the communicator: backends whose ranks are host threads (the CPU
    // backend) need one thread per rank. Throws UNSUPPORTED for a backend without collectives.
    // `options` (NULL = this process, the backend's timeout) as the id was made with.
    Communicator(const runtime::Device &device, const pagoda_comm_unique_id_t &id, int32_t size,
                 int32_t rank, std::string name, const pagoda_comm_options_t *options = nullptr);
    ~Communicator();
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;

    int32_t rank() const noexcept { return rank_; }
    int32_t size() const noexcept { return size_; }
    const std::string &name() const noexcept { return name_; }

    // buf = Σ over ranks of buf, `count` elements of `dtype`.
    void all_reduce_sum(const runtime::Stream &stream, void *buf, size_t count, pagoda_dtype_t dtype) const;
    // recv[r·count ..] = rank r's send, for every rank r.
    void all_gather(const runtime::Stream &stream, const void *send, void *recv, size_t count,
                    pagoda_dtype_t dtype) const;
    // buf = root's buf on every rank.
    void broadcast(const runtime::Stream &stream, void *buf, size_t count, pagoda_dtype_t dtype, int32_t root) const;
    void send(const runtime::Stream &stream, const void *buf, size_t count, pagoda_dtype_t dtype,
              int32_t peer) const;
    void recv(const runtime::Stream &stream, void *buf, size_t count, pagoda_dtype_t dtype,
              int32_t peer) const;
    // Makes every rank's pending and later collectives fail. Safe from any thread.
    void abort() const noexcept;

private:
    [[noreturn]] void failed(const char *call) const;

    const runtime::Device &device_;
    const pagoda_backend_collectives_t &coll_;
    pagoda_backend_comm_t *comm_ = nullptr;
    int32_t size_;
    int32_t rank_;
    std::string name_;
};

// Every communicator of a mesh, so that one failure can abort them all. Thread-safe.
class CommSet {
public:
    void add(const Communicator *comm);
    void remove(const Communicator *comm);
    // Aborts every communicator added and not removed; later add()s are aborted at once, so a
    // rank still joining when the failure happened does not wait for peers that gave up.
    void abort_all() noexcept;
    bool aborted() const;
    // Starts over after the aborted communicators were destroyed.
    void reset();

private:
    mutable std::mutex mutex_;
    std::vector<const Communicator *> comms_;
    bool aborted_ = false;
};

}  // namespace pagoda::mesh
