#include "exec/pipeline_units.hpp"

#include <algorithm>
#include <numeric>

namespace pagoda::exec {

namespace {

// Appends tokens [t0, t1) of sequence `s`'s chunk in `step` to `unit` as one sequence.
void append(PipelineUnit &unit, const ForwardBatch &step, int32_t s, int32_t t0, int32_t t1) {
    ForwardBatch &u = unit.batch;
    if (u.query_start.empty()) u.query_start.push_back(0);
    const int32_t q0 = step.query_start[size_t(s)], q_len = step.query_start[size_t(s) + 1] - q0;
    const int32_t first_row = u.n_tokens();
    for (int32_t t = t0; t < t1; ++t) {
        u.token_ids.push_back(step.token_ids[size_t(q0 + t)]);
        u.positions.push_back(step.positions[size_t(q0 + t)]);
        u.slot_mapping.push_back(step.slot_mapping[size_t(q0 + t)]);
    }
    u.query_start.push_back(u.n_tokens());
    // The slice's context ends with its own tokens: the chunk's later tokens are not cached yet.
    const int32_t context = step.context_lens[size_t(s)] - (q_len - t1);
    u.context_lens.push_back(context);
    u.max_context_len = std::max(u.max_context_len, context);
    u.max_blocks_per_seq = step.max_blocks_per_seq;
    const auto row = step.block_tables.begin() + ptrdiff_t(s) * step.max_blocks_per_seq;
    u.block_tables.insert(u.block_tables.end(), row, row + step.max_blocks_per_seq);
    for (size_t i = 0; i < step.logit_rows.size(); ++i) {
        const int32_t r = step.logit_rows[i];
        if (r >= q0 + t0 && r < q0 + t1) {
            u.logit_rows.push_back(first_row + r - (q0 + t0));
            unit.step_rows.push_back(int32_t(i));
        }
    }
    for (size_t i = 0; i < step.hidden_rows.size(); ++i) {
        const int32_t r = step.hidden_rows[i];
        if (r >= q0 + t0 && r < q0 + t1) {
            u.hidden_rows.push_back(first_row + r - (q0 + t0));
            unit.hidden_step_rows.push_back(int32_t(i));
        }
    }
}

}  // namespace

std::vector<int64_t> scale_slices(const std::vector<int64_t> &plan_slices, int64_t tokens, int64_t granularity) {
    const int64_t total = std::accumulate(plan_slices.begin(), plan_slices.end(), int64_t(0));
    if (plan_slices.size() < 2 || total <= 0 || tokens < 2 * granularity) return {tokens};
    std::vector<int64_t> out;
    int64_t cumulative = 0, cut = 0;
    for (size_t i = 0; i + 1 < plan_slices.size(); ++i) {
        cumulative += plan_slices[i];
        const int64_t next = tokens * cumulative / total / granularity * granularity;
        if (next > cut && next < tokens) {
            out.push_back(next - cut);
            cut = next;
        }
    }
    out.push_back(tokens - cut);
    return out;
}

std::vector<PipelineUnit> split_step(const ForwardBatch &step, int32_t stages, const PipelineOptions &options) {
    const int32_t n_seqs = step.n_seqs();
    std::vector<PipelineUnit> units;
    if (stages <= 1 || n_seqs == 0) {
        PipelineUnit whole;
        whole.batch = step;
        whole.step_rows.resize(step.logit_rows.size());
        std::iota(whole.step_rows.begin(), whole.step_rows.end(), 0);
        whole.hidden_step_rows.resize(step.hidden_rows.size());
        std::iota(whole.hidden_step_rows.begin(), whole.hidden_step_rows.end(), 0);
        units.push_back(std::move(whole));
        return units;
    }
    auto q_len = [&](int32_t s) { return step.query_start[size_t(s) + 1] - step.query_start[size_t(s)]; };

    // TeraPipe slices of long chunks; the other sequences wait for the micro-batches.
    std::vector<int32_t> rest;
    for (int32_t s = 0; s < n_seqs; ++s) {
        if (options.prefill_slices.empty() || q_len(s) < options.slice_min_tokens) {
            rest.push_back(s);
            continue;
        }
        int32_t t = 0;
        for (int64_t len : scale_slices(options.prefill_slices, q_len(s), options.granularity)) {
            PipelineUnit u;
            append(u, step, s, t, t + int32_t(len));
            units.push_back(std::move(u));
            t += int32_t(len);
        }
    }
    if (rest.empty()) return units;

    // Micro-batches of consecutive sequences with about equal token counts.
    int64_t total = 0;
    for (int32_t s : rest) total += q_len(s);
    const int64_t worth = std::max<int64_t>(1, total / std::max<int64_t>(1, options.micro_batch_min_tokens));
    const int32_t wanted = options.micro_batches > 0 ? options.micro_batches : int32_t(std::min<int64_t>(stages, worth));
    const int32_t m = std::min<int32_t>(wanted, int32_t(rest.size()));
    int64_t done = 0;
    size_t next = 0;
    for (int32_t k = 0; k < m; ++k) {
        PipelineUnit u;
        const int64_t target = total * (k + 1) / m;
        // Each micro-batch takes at least one sequence and leaves one for each that follows.
        while (next < rest.size() && (u.batch.n_seqs() == 0 || done + q_len(rest[next]) / 2 < target) &&
               rest.size() - next > size_t(m - k - 1)) {
            append(u, step, rest[next], 0, q_len(rest[next]));
            done += q_len(rest[next]);
            ++next;
        }
        units.push_back(std::move(u));
    }
    return units;
}

}  // namespace pagoda::exec
