// How a step's batch is cut for a pipeline (exec/pipeline_units.hpp): TeraPipe slices of long
// prefill chunks in the plan's proportions, micro-batches of the other sequences, and every
// token, slot, block-table row and logit row accounted for exactly once.
#include <algorithm>
#include <numeric>
#include <vector>

#include "exec/pipeline_units.hpp"

// Last: cmocka defines macros that clash with the C++ library; it needs these first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::exec::ForwardBatch;
using pagoda::exec::PipelineOptions;
using pagoda::exec::PipelineUnit;
using pagoda::exec::scale_slices;
using pagoda::exec::split_step;

namespace {

// A step of sequences with chunks of `lengths` new tokens after `cached` cached ones each, the
// last token of every sequence asking for logits (and every token of sequence `all_rows`).
ForwardBatch step_of(const std::vector<int32_t> &lengths, int32_t cached, int all_rows = -1) {
    ForwardBatch b;
    b.query_start.push_back(0);
    b.max_blocks_per_seq = 64;
    for (size_t s = 0; s < lengths.size(); ++s) {
        for (int32_t t = 0; t < lengths[s]; ++t) {
            if (int(s) == all_rows || t == lengths[s] - 1) b.logit_rows.push_back(b.n_tokens());
            b.token_ids.push_back(int32_t(1000 * s) + t);
            b.positions.push_back(cached + t);
            b.slot_mapping.push_back(int64_t(s) * 100000 + cached + t);
        }
        b.query_start.push_back(b.n_tokens());
        b.context_lens.push_back(cached + lengths[s]);
        b.max_context_len = std::max(b.max_context_len, cached + lengths[s]);
        for (int32_t j = 0; j < b.max_blocks_per_seq; ++j) b.block_tables.push_back(int32_t(s) * 64 + j);
    }
    return b;
}

// Every token of `step` appears in exactly one unit, with its position, slot and its
// sequence's block-table row; each unit's context ends with its own last token; every logit
// row maps back to the step's row of the same token.
void expect_partition(const ForwardBatch &step, const std::vector<PipelineUnit> &units) {
    std::vector<int> seen(size_t(step.n_tokens()), 0), rows(step.logit_rows.size(), 0);
    for (const PipelineUnit &u : units) {
        const ForwardBatch &b = u.batch;
        assert_int_equal(b.query_start.size(), b.context_lens.size() + 1);
        assert_int_equal(u.step_rows.size(), b.logit_rows.size());
        for (int32_t s = 0; s < b.n_seqs(); ++s) {
            for (int32_t i = b.query_start[size_t(s)]; i < b.query_start[size_t(s) + 1]; ++i) {
                const int32_t id = b.token_ids[size_t(i)];
                const int32_t seq = id / 1000, t = id % 1000;
                const int32_t at = step.query_start[size_t(seq)] + t;
                ++seen[size_t(at)];
                assert_int_equal(b.positions[size_t(i)], step.positions[size_t(at)]);
                assert_int_equal(b.slot_mapping[size_t(i)], step.slot_mapping[size_t(at)]);
                assert_int_equal(b.block_tables[size_t(s) * 64], seq * 64);
            }
            assert_int_equal(b.context_lens[size_t(s)], b.positions[size_t(b.query_start[size_t(s) + 1] - 1)] + 1);
        }
        for (size_t i = 0; i < b.logit_rows.size(); ++i) {
            ++rows[size_t(u.step_rows[i])];
            assert_int_equal(b.token_ids[size_t(b.logit_rows[i])],
                             step.token_ids[size_t(step.logit_rows[size_t(u.step_rows[i])])]);
        }
    }
    for (int n : seen) assert_int_equal(n, 1);
    for (int n : rows) assert_int_equal(n, 1);
}

void test_scale_slices(void **) {
    // The plan's proportions, cut at multiples of the granularity, the last taking the rest.
    assert_true((scale_slices({224, 656, 400, 320, 224, 224}, 2048, 8) ==
                 std::vector<int64_t>{224, 656, 400, 320, 224, 224}));
    assert_true((scale_slices({512, 512}, 100, 8) == std::vector<int64_t>{48, 52}));
    // Too short to cut, or nothing to cut by.
    assert_true((scale_slices({512, 512}, 15, 8) == std::vector<int64_t>{15}));
    assert_true((scale_slices({2048}, 300, 8) == std::vector<int64_t>{300}));
    for (int64_t tokens : {16, 17, 64, 333, 2048}) {
        const std::vector<int64_t> s = scale_slices({100, 300, 200, 400}, tokens, 8);
        assert_int_equal(std::accumulate(s.begin(), s.end(), int64_t(0)), tokens);
        for (int64_t l : s) assert_true(l > 0);
    }
}

void test_one_stage_is_one_unit(void **) {
    const ForwardBatch step = step_of({5, 1, 1, 9}, 3);
    const std::vector<PipelineUnit> units = split_step(step, 1, PipelineOptions{});
    assert_int_equal(units.size(), 1);
    assert_int_equal(units[0].batch.n_tokens(), step.n_tokens());
    expect_partition(step, units);
}

void test_micro_batches(void **) {
    // Ten decodes: too few tokens for micro-batches to pay (each reads the weights again).
    const ForwardBatch decodes = step_of({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 20);
    PipelineOptions o;
    std::vector<PipelineUnit> units = split_step(decodes, 2, o);
    assert_int_equal(units.size(), 1);
    expect_partition(decodes, units);
    // Asked for, they are cut: about equal token counts, never more than the sequences.
    o.micro_batches = 2;
    units = split_step(decodes, 2, o);
    assert_int_equal(units.size(), 2);
    assert_int_equal(units[0].batch.n_seqs(), 5);
    expect_partition(decodes, units);
    o.micro_batches = 4;
    units = split_step(decodes, 2, o);
    assert_int_equal(units.size(), 4);
    expect_partition(decodes, units);
    o.micro_batches = 16;
    assert_int_equal(split_step(step_of({1, 1}, 4), 4, o).size(), 2);
    // Automatic on a step with enough tokens: one micro-batch per stage, each of ≥ 128 tokens.
    o.micro_batches = 0;
    const ForwardBatch prompts = step_of({40, 40, 40, 40, 40, 40, 40, 40}, 0);
    o.slice_min_tokens = 1000;
    units = split_step(prompts, 2, o);
    assert_int_equal(units.size(), 2);
    expect_partition(prompts, units);
    assert_int_equal(split_step(prompts, 3, o).size(), 2);  // 320 tokens hold two of 128, not three
    o.micro_batches = 1;  // off
    assert_int_equal(split_step(prompts, 3, o).size(), 1);
}

void test_slices_of_long_chunks(void **) {
    // A 200-token prompt chunk with prompt log-probabilities (a row for every token) beside
    // two decodes: the chunk becomes slices in order, the decodes one micro-batch.
    const ForwardBatch step = step_of({1, 200, 1}, 8, 1);
    PipelineOptions o;
    o.prefill_slices = {64, 128, 64};
    o.granularity = 8;
    o.slice_min_tokens = 64;
    const std::vector<PipelineUnit> units = split_step(step, 2, o);
    assert_int_equal(units.size(), 3 + 1);
    assert_int_equal(units[0].batch.n_tokens(), 48);
    assert_int_equal(units[1].batch.n_tokens(), 96);  // cut at 200·192/256 = 150, down to 144
    assert_int_equal(units[2].batch.n_tokens(), 56);
    // Slice i's context is what the slices before it and the cache hold.
    assert_int_equal(units[0].batch.context_lens[0], 8 + 48);
    assert_int_equal(units[1].batch.context_lens[0], 8 + 144);
    assert_int_equal(units[2].batch.context_lens[0], 8 + 200);
    expect_partition(step, units);
    // Chunks below the threshold are not sliced.
    o.slice_min_tokens = 500;
    expect_partition(step, split_step(step, 2, o));
    assert_int_equal(split_step(step, 2, o).size(), 1);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_slices),
        cmocka_unit_test(test_one_stage_is_one_unit),
        cmocka_unit_test(test_micro_batches),
        cmocka_unit_test(test_slices_of_long_chunks),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
