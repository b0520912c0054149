// The shared descriptor checks (backends/common/op_checks.hpp) of the mixture-of-experts ops
// ABI 1.8 added, MOE_ROUTE and MOE_MATMUL: what each accepts, and each refusal's exact status
// and message, recorded once (op_check_recorder.hpp); and the wording of the data errors the
// backends report when the ops run.
#include <climits>
#include <cstdint>
#include <string>

#include "check_helpers.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"
#include "op_check_recorder.hpp"  // last: it includes cmocka.h

namespace {

using pagoda::plugin::Reporter;

pagoda_op_moe_route_t route_descriptor() {
    pagoda_op_moe_route_t a{};
    a.struct_size = sizeof a;
    a.n_tokens = 5;
    a.n_experts = 8;
    a.top_k = 2;
    a.routing = PAGODA_MOE_SOFTMAX_TOPK_NORM;
    return a;
}

void test_route_shapes(void **state) {
    (void)state;
    pagoda_op_moe_route_t a = route_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_route(r, a); };
    assert_accepted(check, "Mixtral's 8 experts, top 2");
    a.routing = PAGODA_MOE_SOFTMAX_TOPK;
    assert_accepted(check, "softmax then top-k, not renormalised");
    a.n_experts = 1024;
    a.top_k = 64;
    assert_accepted(check, "the largest router ops.h allows");
    a.n_experts = a.top_k = 1;
    assert_accepted(check, "one expert");

    a = route_descriptor();
    a.n_tokens = 0;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "moe_route: n_tokens = 0 must be positive");
    a.n_tokens = 5;
    a.n_experts = -1;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_route: n_experts = -1 must be positive");
    a.n_experts = 8;
    a.top_k = 0;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "moe_route: top_k = 0 must be positive");
    a.top_k = 9;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_route: top_k = 9 is more than n_experts = 8");
    a.n_experts = 1025;
    a.top_k = 2;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_route: n_experts = 1025 is more than 1024");
    a.n_experts = 128;
    a.top_k = 65;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT, "moe_route: top_k = 65 is more than 64");
    // The router's logits must be addressable as f32.
    a.top_k = 2;
    a.n_tokens = int64_t(1) << 55;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_route: logits of 36028797018963968 rows with stride 128 does not fit in "
                    "the address space");
}

// A routing a later ABI may add is unsupported here, not invalid; it is checked first.
void test_route_routing(void **state) {
    (void)state;
    pagoda_op_moe_route_t a = route_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_route(r, a); };
    a.routing = 2;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "moe_route: routing = 2 is not a routing this backend knows");
    a.routing = -1;
    a.n_tokens = 0;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "moe_route: routing = -1 is not a routing this backend knows");
}

pagoda_op_moe_matmul_t matmul_descriptor() {
    pagoda_op_moe_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = PAGODA_DTYPE_BF16;
    a.w_dtype = PAGODA_DTYPE_Q4_K;
    a.y_dtype = PAGODA_DTYPE_BF16;
    a.n_tokens = 7;
    a.top_k = 2;
    a.n_experts = 8;
    a.n = 1408;
    a.k = 2048;
    return a;
}

void test_matmul_accepts(void **state) {
    (void)state;
    pagoda_op_moe_matmul_t a = matmul_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_matmul(r, a); };
    assert_accepted(check, "Q4_K experts, bf16 activations");
    for (pagoda_dtype_t w : {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16,
                             PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_0, PAGODA_DTYPE_Q5_K,
                             PAGODA_DTYPE_Q6_K}) {
        a.w_dtype = w;
        assert_accepted(check, pagoda::plugin::dtype_text(w).c_str());
    }
    a.x_dtype = PAGODA_DTYPE_F16;
    a.y_dtype = PAGODA_DTYPE_F32;
    a.x_per_slot = 1;
    a.ldx = 2050;
    a.ldw = 2048 + 256;
    a.ldy = 2000;
    assert_accepted(check, "padded strides, a row of x per slot");
    // Expert parallelism: fewer experts held than a token picks, from a later global id.
    a.n_experts = 1;
    a.top_k = 8;
    a.expert_offset = 120;
    assert_accepted(check, "one expert of 128 held, top 8");
    a.expert_offset = INT32_MAX;
    assert_accepted(check, "the largest int32 offset");
    float weights = 0.0f;
    a.weights = &weights;
    assert_accepted(check, "weighted sums");
}

void test_matmul_refusals(void **state) {
    (void)state;
    pagoda_op_moe_matmul_t a = matmul_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_matmul(r, a); };
    const struct {
        int64_t pagoda_op_moe_matmul_t::*field;
        const char *name;
    } shapes[] = {{&pagoda_op_moe_matmul_t::n_tokens, "n_tokens"},
                  {&pagoda_op_moe_matmul_t::top_k, "top_k"},
                  {&pagoda_op_moe_matmul_t::n_experts, "n_experts"},
                  {&pagoda_op_moe_matmul_t::n, "n"},
                  {&pagoda_op_moe_matmul_t::k, "k"}};
    for (const auto &shape : shapes) {
        a = matmul_descriptor();
        a.*shape.field = 0;
        assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                        (std::string("moe_matmul: ") + shape.name + " = 0 must be positive")
                            .c_str());
    }
    a = matmul_descriptor();
    a.expert_offset = -1;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: expert_offset = -1 is outside [0, 2147483647] (expert ids are "
                    "int32)");
    a.expert_offset = int64_t(INT32_MAX) + 1;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: expert_offset = 2147483648 is outside [0, 2147483647] (expert "
                    "ids are int32)");
    a = matmul_descriptor();
    a.ldx = 2047;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: ldx = 2047 is smaller than the row length 2048");
    a.ldx = 0;
    a.ldw = 100;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: ldw = 100 is smaller than the row length 2048");
    a.ldw = 0;
    a.ldy = 1407;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: ldy = 1407 is smaller than the row length 1408");
}

// x_dtype and y_dtype must be set (as MATMUL's); w_dtype as MATMUL's w, block rows whole.
void test_matmul_dtypes(void **state) {
    (void)state;
    pagoda_op_moe_matmul_t a = matmul_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_matmul(r, a); };
    set_raw(a.x_dtype, PAGODA_DTYPE_INVALID);
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: x_dtype is not set (must be f32, bf16 or f16)");
    a.x_dtype = PAGODA_DTYPE_Q8_0;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "moe_matmul: x_dtype = q8_0 (8) is not supported (must be f32, bf16 or f16)");
    a = matmul_descriptor();
    set_raw(a.y_dtype, 99);
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "moe_matmul: y_dtype = unknown (99) is not supported (must be f32, bf16 or "
                    "f16)");
    a = matmul_descriptor();
    a.w_dtype = PAGODA_DTYPE_I32;
    assert_rejected(check, PAGODA_ERR_UNSUPPORTED,
                    "moe_matmul: w_dtype = i32 (4) is not supported (must be f32, bf16, f16 or a "
                    "quantized block type)");
    a.w_dtype = PAGODA_DTYPE_Q4_K;
    a.k = 2048 + 32;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: rows of 2080 values at stride 2080 are not whole q4_k blocks of "
                    "256");
    a.k = 2048;
    a.ldw = 2048 + 32;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: rows of 2048 values at stride 2080 are not whole q4_k blocks of "
                    "256");
    a.w_dtype = PAGODA_DTYPE_Q8_0;
    assert_accepted(check, "the same stride in Q8_0's blocks of 32");
}

void test_matmul_extents(void **state) {
    (void)state;
    pagoda_op_moe_matmul_t a = matmul_descriptor();
    auto check = [&a](const Reporter &r) { return pagoda::plugin::check_moe_matmul(r, a); };
    a.n_tokens = INT64_MAX / 2;
    a.top_k = 3;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: n_tokens × top_k is too large");
    // y holds a row per slot without weights, a row per token with them.
    a = matmul_descriptor();
    a.x_dtype = a.y_dtype = PAGODA_DTYPE_F32;
    a.w_dtype = PAGODA_DTYPE_F32;
    a.n = 1;
    a.k = 1;
    a.ldy = int64_t(1) << 60;
    a.top_k = 1;
    a.n_tokens = 4;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: y of 4 rows with stride 1152921504606846976 does not fit in the "
                    "address space");
    a.ldy = 0;
    a.ldw = int64_t(1) << 61;
    a.n = 4;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: an expert's matrix of 4 rows with stride 2305843009213693952 does "
                    "not fit in the address space");
    a.ldw = 0;
    a.n = 1;
    // x holds a row per token, or per slot with x_per_slot.
    a.ldx = int64_t(1) << 60;
    a.n_tokens = 2;
    a.top_k = 2;
    assert_accepted(check, "two rows of x 2^60 values apart");
    a.x_per_slot = 1;
    assert_rejected(check, PAGODA_ERR_INVALID_ARGUMENT,
                    "moe_matmul: x of 4 rows with stride 1152921504606846976 does not fit in the "
                    "address space");
}

// MOE_ROUTE and MOE_MATMUL are new in ABI 1.8: their structs have no shorter form.
void test_struct_size(void **state) {
    (void)state;
    using pagoda::plugin::read_op_args;
    pagoda_op_moe_matmul_t short_matmul = matmul_descriptor();
    short_matmul.struct_size = offsetof(pagoda_op_moe_matmul_t, ldy);
    pagoda_op_moe_matmul_t matmul{};
    assert_rejected(
        [&](const Reporter &r) { return read_op_args(r, "moe_matmul", &short_matmul, matmul); },
        PAGODA_ERR_INVALID_ARGUMENT,
        ("moe_matmul: struct_size " + std::to_string(offsetof(pagoda_op_moe_matmul_t, ldy)) +
         " is too small (at least " + std::to_string(sizeof matmul) + ")")
            .c_str());
    pagoda_op_moe_route_t route = route_descriptor();
    pagoda_op_moe_route_t read{};
    assert_accepted([&](const Reporter &r) { return read_op_args(r, "moe_route", &route, read); },
                    "a whole moe_route");
    assert_int_equal(read.top_k, 2);
}

void test_data_error_wording(void **state) {
    (void)state;
    assert_string_equal(pagoda::plugin::moe_nan_logit_text(3, 5).c_str(), "logits[3, 5] is NaN");
    assert_string_equal(pagoda::plugin::moe_negative_id_text(7, -1).c_str(),
                        "expert_ids[7] = -1 is negative (expert ids are global, from 0)");
    assert_string_equal(pagoda::plugin::moe_null_expert_text(2, 5).c_str(),
                        "experts[2] is NULL, but expert_ids[5] picks it");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_shapes),      cmocka_unit_test(test_route_routing),
        cmocka_unit_test(test_matmul_accepts),    cmocka_unit_test(test_matmul_refusals),
        cmocka_unit_test(test_matmul_dtypes),     cmocka_unit_test(test_matmul_extents),
        cmocka_unit_test(test_struct_size),       cmocka_unit_test(test_data_error_wording),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
