#include "model/page_residency.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace pagoda::model {

namespace {

bool inside_a_mapping(const Model &model, const TensorRef &t) {
    const auto *p = static_cast<const unsigned char *>(t.data);
    for (const MappedFile *m : model.mappings())
        if (p >= m->data() && p + t.bytes <= m->data() + m->size()) return true;
    return false;
}

// madvise on the whole pages inside [begin, end).
uint64_t drop_pages(uintptr_t begin, uintptr_t end, uintptr_t page) {
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    if (first >= last) return 0;
    // Advice only: a failure leaves the pages resident, which costs memory, not correctness.
    return ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED) == 0 ? last - first : 0;
}

// `used` sorted and merged into disjoint ranges, so that they are ordered by their ends too.
std::vector<ByteRange> merged(std::vector<ByteRange> used) {
    std::sort(used.begin(), used.end(), [](const ByteRange &a, const ByteRange &b) { return a.begin < b.begin; });
    std::vector<ByteRange> out;
    for (const ByteRange &r : used) {
        if (r.begin >= r.end) continue;
        if (!out.empty() && r.begin <= out.back().end) out.back().end = std::max(out.back().end, r.end);
        else out.push_back(r);
    }
    return out;
}

}  // namespace

uint64_t release_unused_pages(const Model &model, std::vector<ByteRange> used) {
    const long size = ::sysconf(_SC_PAGESIZE);
    const uintptr_t page = uintptr_t(size > 0 ? size : 4096);
    const std::vector<ByteRange> ranges = merged(std::move(used));
    uint64_t dropped = 0;
    for (const auto &[name, t] : model.tensors().all()) {
        if (t.data == nullptr || t.bytes == 0 || !inside_a_mapping(model, t)) continue;
        const auto *begin = static_cast<const unsigned char *>(t.data);
        const unsigned char *const end = begin + t.bytes;
        // The tensor's gaps between the ranges that overlap it.
        const unsigned char *at = begin;
        auto r = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                  [](const unsigned char *p, const ByteRange &x) { return p < x.end; });
        for (; r != ranges.end() && r->begin < end; ++r) {
            if (r->begin > at) dropped += drop_pages(uintptr_t(at), uintptr_t(r->begin), page);
            at = std::max(at, r->end);
        }
        if (at < end) dropped += drop_pages(uintptr_t(at), uintptr_t(end), page);
    }
    return dropped;
}

}  // namespace pagoda::model
