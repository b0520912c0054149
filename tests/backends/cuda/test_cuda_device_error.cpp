// Host-side pieces of the CUDA backend's paged-KV ops that need no device: the messages of
// errors found on the device (device_error.cpp), which must read like the CPU backend's for the
// same mistake, and the visible key range of a query (paged_attention_params.hpp), which must
// follow ops.h's causal offset and sliding window.
#include <cstdint>
#include <cstring>
#include <string>

#include "device_error.hpp"
#include "paged_attention_params.hpp"
#include "sample_rules.hpp"
#include "pagoda/ops.h"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using namespace pagoda::cuda;

namespace {

DeviceError record(pagoda_op_t op, DeviceErrorField field, int64_t index, int64_t value,
                   int64_t limit) {
    DeviceError e{};
    e.field = int32_t(field);
    e.op = int32_t(op);
    e.index = index;
    e.value = value;
    e.limit = limit;
    return e;
}

void expect(const DeviceError &e, const char *want) {
    const std::string got = describe(e);
    if (got != want) fail_msg("describe gave\n  \"%s\"\nwanted\n  \"%s\"", got.c_str(), want);
}

void test_kv_write_and_embedding_messages(void **) {
    expect(record(PAGODA_OP_KV_WRITE, DeviceErrorField::KvWriteSlot, 3, 4100, 4096),
           "kv_write: slot_mapping[3] = 4100 is past the cache's 4096 slots (num_blocks × "
           "block_size) (found on the device)");
    expect(record(PAGODA_OP_EMBEDDING, DeviceErrorField::EmbeddingId, 7, -1, 32000),
           "embedding: ids[7] = -1 is outside [0, vocab_size = 32000) (found on the device)");
}

void test_paged_attention_messages(void **) {
    expect(record(PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionQueryStart, 0, 5, 0),
           "paged_attention: query_start[0] = 5 must be 0 (found on the device)");
    expect(record(PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionQueryStart, 2, 3, 9),
           "paged_attention: query_start[2] = 3 is below query_start[1] = 9 (offsets must not "
           "decrease) (found on the device)");
    // A context shorter than its chunk records q_len as the limit ...
    expect(record(PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionContext, 1, 2, 4),
           "paged_attention: context_lens[1] = 2 is smaller than sequence 1's q_len 4 (the "
           "context includes the new tokens) (found on the device)");
    // ... and one too long the capacity it exceeds.
    expect(record(PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionContext, 0, 300, 256),
           "paged_attention: context_lens[0] = 300 exceeds 256 (max_blocks_per_seq × block_size, "
           "or max_context_len if smaller) (found on the device)");
    expect(record(PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionBlock, 17, 99, 64),
           "paged_attention: block_tables entry 17 (sequence × max_blocks_per_seq + block index) "
           "= 99 is outside [0, num_blocks 64) (found on the device)");
}

void test_rope_and_unknown_messages(void **) {
    const float bad = -2.5f;
    uint32_t bits;
    std::memcpy(&bits, &bad, sizeof bits);
    expect(record(PAGODA_OP_ROPE, DeviceErrorField::RopeFreqFactor, 4, int64_t(bits), 32),
           "rope: freq_factors[4] = -2.5 must be finite and positive (found on the device)");
    // KV_WRITE's fused rotation names the factors of its k_rope.
    expect(record(PAGODA_OP_KV_WRITE, DeviceErrorField::RopeFreqFactor, 4, int64_t(bits), 32),
           "kv_write: k_rope.freq_factors[4] = -2.5 must be finite and positive (found on the "
           "device)");
    // SAMPLE's row faults: the parameter's bits, or the column of a NaN logit.
    const float top_p = 1.5f;
    std::memcpy(&bits, &top_p, sizeof bits);
    expect(record(PAGODA_OP_SAMPLE, DeviceErrorField::SampleRow, 3, int64_t(bits),
                  int64_t(pagoda::plugin::SampleFault::TopP)),
           "sample: top_p[3] = 1.5 must be in (0, 1] (found on the device)");
    expect(record(PAGODA_OP_SAMPLE, DeviceErrorField::SampleRow, 2, 77,
                  int64_t(pagoda::plugin::SampleFault::NanLogit)),
           "sample: logits row 2 has a NaN at column 77 (found on the device)");
    // The mixture-of-experts ops, worded as the CPU backend words them (op_checks.hpp).
    expect(record(PAGODA_OP_MOE_ROUTE, DeviceErrorField::MoeRouteLogit, 2, 9, 0),
           "moe_route: logits[2, 9] is NaN (found on the device)");
    expect(record(PAGODA_OP_MOE_MATMUL, DeviceErrorField::MoeExpertId, 7, -1, 0),
           "moe_matmul: expert_ids[7] = -1 is negative (expert ids are global, from 0) (found "
           "on the device)");
    expect(record(PAGODA_OP_MOE_MATMUL, DeviceErrorField::MoeExpert, 2, 0, 5),
           "moe_matmul: experts[2] is NULL, but expert_ids[5] picks it (found on the device)");
    expect(record(PAGODA_OP_MOE_MATMUL, DeviceErrorField::MoeExpert, 3, 0x1002, 8),
           "moe_matmul: experts[3] = 0x1002 is misaligned for its type (f32 needs 4 bytes, "
           "Q4_K and Q5_K 8, the others 2) (found on the device)");
    // A record from a newer kernel still gives a message, with the numbers.
    const std::string got = describe(record(PAGODA_OP_ADD, DeviceErrorField(99), 1, 2, 3));
    assert_true(got.find("add: ") == 0);
    assert_true(got.find("unknown kind 99") != std::string::npos);
    assert_true(got.find("(found on the device)") != std::string::npos);
}

PagedAttentionArgs args(bool causal, int32_t window) {
    PagedAttentionArgs a{};
    a.causal = causal;
    a.sliding_window = window;
    return a;
}

void test_visible_keys(void **) {
    // A causal chunk of 3 new tokens in a context of 10 sits at positions 7, 8, 9.
    KeyRange k = visible_keys(args(true, 0), 10, 3, 0);
    assert_int_equal(k.first, 0);
    assert_int_equal(k.last, 7);
    k = visible_keys(args(true, 0), 10, 3, 2);
    assert_int_equal(k.last, 9);
    // Not causal: the whole context.
    k = visible_keys(args(false, 0), 10, 3, 0);
    assert_int_equal(k.first, 0);
    assert_int_equal(k.last, 9);
    // A window of 4 keeps the query's own key and the 3 before it.
    k = visible_keys(args(true, 4), 10, 3, 1);  // position 8
    assert_int_equal(k.first, 5);
    assert_int_equal(k.last, 8);
    // The window counts from the query's position even when not causal.
    k = visible_keys(args(false, 4), 10, 3, 0);  // position 7
    assert_int_equal(k.first, 4);
    assert_int_equal(k.last, 9);
    // A window longer than the context starts at key 0.
    k = visible_keys(args(true, 100), 10, 1, 0);
    assert_int_equal(k.first, 0);
    assert_int_equal(k.last, 9);
    // The extremes of int32 do not overflow.
    k = visible_keys(args(true, INT32_MAX), INT32_MAX, 1, 0);
    assert_int_equal(k.first, 0);
    assert_int_equal(k.last, INT32_MAX - 1);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_write_and_embedding_messages),
        cmocka_unit_test(test_paged_attention_messages),
        cmocka_unit_test(test_rope_and_unknown_messages),
        cmocka_unit_test(test_visible_keys),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
