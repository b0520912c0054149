#include "shm_collectives.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collective_reduce.hpp"
#include "dtypes.hpp"

namespace pagoda::cpu {

namespace {

const unsigned char *bytes_of(const void *p) { return static_cast<const unsigned char *>(p); }
unsigned char *bytes_of(void *p) { return static_cast<unsigned char *>(p); }

// Elements of `dtype` that fit a slot.
size_t piece_elements(const ShmCommGroup &group, pagoda_dtype_t dtype) {
    return group.slot_bytes() / formats::dtype_size(dtype);
}

}  // namespace

bool shm_all_reduce(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                    pagoda_reduce_op_t op, std::string &error) {
    const size_t elem = formats::dtype_size(dtype), piece = piece_elements(group, dtype);
    const auto slots = group.slots();
    for (size_t done = 0; done < count; done += piece) {
        const size_t n = std::min(piece, count - done);
        std::memcpy(group.slot(group.rank()), bytes_of(send) + done * elem, n * elem);
        if (!group.barrier(error)) return false;
        // Every rank reduces the whole piece itself: one barrier fewer than splitting it, and
        // the reads are cheap next to the matmuls around a tensor-parallel sum.
        reduce_into({reinterpret_cast<const void *const *>(slots.data()), slots.size()}, dtype, 0, n, op, bytes_of(recv) + done * elem);
        if (!group.barrier(error)) return false;
    }
    return true;
}

bool shm_all_gather(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                    std::string &error) {
    const size_t elem = formats::dtype_size(dtype), piece = piece_elements(group, dtype);
    for (size_t done = 0; done < count; done += piece) {
        const size_t n = std::min(piece, count - done);
        std::memcpy(group.slot(group.rank()), bytes_of(send) + done * elem, n * elem);
        if (!group.barrier(error)) return false;
        for (int32_t r = 0; r < group.n_ranks(); ++r)
            std::memcpy(bytes_of(recv) + (size_t(r) * count + done) * elem, group.slot(r), n * elem);
        if (!group.barrier(error)) return false;
    }
    return true;
}

bool shm_reduce_scatter(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                        pagoda_reduce_op_t op, std::string &error) {
    const size_t elem = formats::dtype_size(dtype), piece = piece_elements(group, dtype);
    const auto slots = group.slots();
    // Rank r's share, piece by piece: every rank stages its part of it, and r reduces.
    for (int32_t owner = 0; owner < group.n_ranks(); ++owner) {
        for (size_t done = 0; done < count; done += piece) {
            const size_t n = std::min(piece, count - done);
            std::memcpy(group.slot(group.rank()), bytes_of(send) + (size_t(owner) * count + done) * elem, n * elem);
            if (!group.barrier(error)) return false;
            if (owner == group.rank()) reduce_into({reinterpret_cast<const void *const *>(slots.data()), slots.size()}, dtype, 0, n, op, bytes_of(recv) + done * elem);
            if (!group.barrier(error)) return false;
        }
    }
    return true;
}

bool shm_broadcast(ShmCommGroup &group, const void *send, void *recv, size_t count, pagoda_dtype_t dtype,
                   int32_t root, std::string &error) {
    const size_t elem = formats::dtype_size(dtype), piece = piece_elements(group, dtype);
    const bool is_root = group.rank() == root;
    for (size_t done = 0; done < count; done += piece) {
        const size_t n = std::min(piece, count - done);
        if (is_root) std::memcpy(group.slot(root), bytes_of(send) + done * elem, n * elem);
        if (!group.barrier(error)) return false;
        if (!is_root || send != recv) std::memcpy(bytes_of(recv) + done * elem, group.slot(root), n * elem);
        if (!group.barrier(error)) return false;
    }
    return true;
}

}  // namespace pagoda::cpu
