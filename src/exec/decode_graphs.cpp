#include "exec/decode_graphs.hpp"

#include <algorithm>
#include <string>

namespace pagoda::exec {

namespace {

constexpr int32_t kLargestBucket = 256;
// The longest context a graph is recorded for (vLLM's max_seq_len_to_capture): the decode
// attention's split-K grid and its partial results are sized for it, so longer ones would make
// every replay launch (and hold scratch for) mostly empty partitions. Longer contexts run op by op.
constexpr int64_t kLongestGraphContext = 8192;

bool same_cache(const kv::KvGeometry &a, const kv::KvGeometry &b) {
    return a.dtype == b.dtype && a.block_size == b.block_size && a.num_blocks == b.num_blocks &&
           a.n_layers == b.n_layers && a.n_kv_heads == b.n_kv_heads && a.head_dim == b.head_dim;
}

bool same_pools(const std::vector<kv::LayerPools> &a, const std::vector<kv::LayerPools> &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const kv::LayerPools &x, const kv::LayerPools &y) {
                          return x.k == y.k && x.v == y.v;
                      });
}

template <typename T>
runtime::DeviceBuffer device_array(const runtime::Device &device, size_t n, int32_t bucket,
                                   const char *what) {
    return runtime::DeviceBuffer(device, n * sizeof(T),
                                 std::string(what) + " of the decode graph for " +
                                     std::to_string(bucket) + " sequences");
}

}  // namespace

int32_t decode_bucket(int32_t n_seqs) {
    if (n_seqs < 1 || n_seqs > kLargestBucket) return 0;
    for (int32_t b : {1, 2, 4, 8, 16, 24, 32})
        if (n_seqs <= b) return b;
    return (n_seqs + 15) / 16 * 16;
}

bool is_decode_only(const ForwardBatch &b) {
    const int32_t n = b.n_seqs();
    if (n == 0 || b.n_tokens() != n || b.logit_rows.size() != size_t(n) ||
        b.query_start.size() != size_t(n) + 1)
        return false;
    for (int32_t i = 0; i < n; ++i)
        if (b.query_start[size_t(i) + 1] != i + 1 || b.logit_rows[size_t(i)] != i) return false;
    return true;
}

int32_t DecodeGraphs::use_cache(const kv::KvGeometry &geometry,
                                const std::vector<kv::LayerPools> &pools, int64_t max_context) {
    if (!buckets_.empty() && same_cache(geometry, geometry_) && same_pools(pools, pools_))
        return row_width_;
    buckets_.clear();
    geometry_ = geometry;
    pools_ = pools;
    const int64_t capacity = geometry.num_blocks * geometry.block_size;
    int64_t longest = max_context > 0 ? std::min(max_context, capacity) : capacity;
    longest = std::min(longest, kLongestGraphContext);
    row_width_ = int32_t((longest + geometry.block_size - 1) / geometry.block_size);
    return row_width_;
}

DecodeBucket *DecodeGraphs::prepare(const ForwardBatch &batch) {
    const int32_t n = batch.n_seqs(), size = decode_bucket(n);
    const int32_t width = row_width_, block_size = geometry_.block_size;
    for (int32_t s = 0; s < n; ++s)
        if (batch.context_lens[size_t(s)] > int64_t(width) * block_size) return nullptr;

    const runtime::Device &device = stream_.device();
    auto [it, made] = buckets_.try_emplace(size);
    DecodeBucket &b = it->second;
    ForwardBatch &p = b.padded;
    if (made) {
        b.size = size;
        b.token_ids = device_array<int32_t>(device, size_t(size), size, "token ids");
        b.positions = device_array<int32_t>(device, size_t(size), size, "positions");
        b.slots = device_array<int64_t>(device, size_t(size), size, "slot mapping");
        b.query_start = device_array<int32_t>(device, size_t(size) + 1, size, "query starts");
        b.context_lens = device_array<int32_t>(device, size_t(size), size, "context lengths");
        b.block_tables =
            device_array<int32_t>(device, size_t(size) * size_t(width), size, "block tables");
        b.logit_rows = device_array<int32_t>(device, size_t(size), size, "logit rows");
        // What never changes: one token per sequence, every row's logits, the row width.
        p.query_start.resize(size_t(size) + 1);
        p.logit_rows.resize(size_t(size));
        for (int32_t i = 0; i <= size; ++i) p.query_start[size_t(i)] = i;
        for (int32_t i = 0; i < size; ++i) p.logit_rows[size_t(i)] = i;
        p.max_blocks_per_seq = width;
        p.max_context_len = width * block_size;
    }

    // Real sequences first, then the padding: token 0 at position 0 into no slot, over a
    // context of one token in block 0 (which every cache has).
    p.token_ids.assign(batch.token_ids.begin(), batch.token_ids.end());
    p.positions.assign(batch.positions.begin(), batch.positions.end());
    p.slot_mapping.assign(batch.slot_mapping.begin(), batch.slot_mapping.end());
    p.context_lens.assign(batch.context_lens.begin(), batch.context_lens.end());
    p.token_ids.resize(size_t(size), 0);
    p.positions.resize(size_t(size), 0);
    p.slot_mapping.resize(size_t(size), -1);
    p.context_lens.resize(size_t(size), 1);
    p.block_tables.assign(size_t(size) * size_t(width), 0);
    // The batch's rows may be narrower or wider than the fixed width; the entries past a
    // sequence's context are never read, so a wider row's tail is dropped.
    const size_t copied = size_t(std::min(batch.max_blocks_per_seq, width));
    for (int32_t s = 0; s < n; ++s)
        std::copy_n(batch.block_tables.begin() + ptrdiff_t(size_t(s) * size_t(batch.max_blocks_per_seq)),
                    copied, p.block_tables.begin() + ptrdiff_t(size_t(s) * size_t(width)));

    auto upload = [&](const runtime::DeviceBuffer &dst, const auto &src) {
        stream_.copy(dst.get(), src.data(), src.size() * sizeof(src[0]), PAGODA_COPY_HOST_TO_DEVICE);
    };
    upload(b.token_ids, p.token_ids);
    upload(b.positions, p.positions);
    upload(b.slots, p.slot_mapping);
    upload(b.context_lens, p.context_lens);
    // The padding's rows, like what never changes, only on the first step: later steps leave
    // whatever ids a larger batch left there, which are in range, and a padding sequence reads
    // only its first entry.
    if (made) {
        upload(b.block_tables, p.block_tables);
        upload(b.query_start, p.query_start);
        upload(b.logit_rows, p.logit_rows);
    } else {
        stream_.copy(b.block_tables.get(), p.block_tables.data(),
                     size_t(n) * size_t(width) * sizeof(int32_t), PAGODA_COPY_HOST_TO_DEVICE);
    }
    return &b;
}

void DecodeGraphs::drop_graphs() noexcept {
    for (auto &[size, bucket] : buckets_) bucket.graph.reset();
}

}  // namespace pagoda::exec
