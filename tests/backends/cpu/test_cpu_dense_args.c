/* How the CPU backend's dense ops treat their argument structs, for every op alike: a NULL
 * struct or a struct_size older than ABI 1.0 is an invalid argument; a larger struct_size (a
 * newer caller) is accepted while its extra fields are zero, and refused as unsupported when one
 * is set; `supports` reads only the description, so NULL pointers pass;
 * `launch` reports the NULL pointer by field name. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* A valid description of each op, pointers NULL. */
typedef struct dense_descriptors {
    pagoda_op_matmul_t matmul;
    pagoda_op_embedding_t embedding;
    pagoda_op_rmsnorm_t rmsnorm;
    pagoda_op_rope_t rope;
    pagoda_op_silu_mul_t silu_mul;
    pagoda_op_add_t add;
    pagoda_op_argmax_t argmax;
    pagoda_op_softmax_t softmax;
} dense_descriptors_t;

static void fill_descriptors(dense_descriptors_t *d) {
    memset(d, 0, sizeof *d);
    d->matmul.struct_size = sizeof d->matmul;
    d->matmul.x_dtype = PAGODA_DTYPE_F32;
    d->matmul.w_dtype = PAGODA_DTYPE_F16;
    d->matmul.y_dtype = PAGODA_DTYPE_F32;
    d->matmul.m = 1;
    d->matmul.n = 2;
    d->matmul.k = 3;
    d->embedding.struct_size = sizeof d->embedding;
    d->embedding.table_dtype = PAGODA_DTYPE_BF16;
    d->embedding.vocab_size = 10;
    d->embedding.dim = 4;
    d->embedding.n_tokens = 2;
    d->rmsnorm.struct_size = sizeof d->rmsnorm;
    d->rmsnorm.weight_dtype = PAGODA_DTYPE_F32;
    d->rmsnorm.rows = 1;
    d->rmsnorm.dim = 4;
    d->rmsnorm.eps = 1e-5f;
    d->rope.struct_size = sizeof d->rope;
    d->rope.n_tokens = 1;
    d->rope.n_heads = 1;
    d->rope.head_dim = 4;
    d->rope.theta = 10000.0f;
    d->silu_mul.struct_size = sizeof d->silu_mul;
    d->silu_mul.rows = 1;
    d->silu_mul.dim = 4;
    d->add.struct_size = sizeof d->add;
    d->add.n = 4;
    d->argmax.struct_size = sizeof d->argmax;
    d->argmax.rows = 1;
    d->argmax.cols = 4;
    d->softmax.struct_size = sizeof d->softmax;
    d->softmax.rows = 1;
    d->softmax.cols = 4;
}

typedef struct op_entry {
    pagoda_op_t op;
    void *args;
    size_t size;
    const char *null_field; /* the first pointer launch must name when all are NULL */
} op_entry_t;

/* Fills `d` with valid descriptions and lists them in `e`; returns how many. */
static size_t op_entries(dense_descriptors_t *d, op_entry_t e[8]) {
    fill_descriptors(d);
    size_t n = 0;
    e[n++] = (op_entry_t){PAGODA_OP_MATMUL, &d->matmul, sizeof d->matmul, "x is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_EMBEDDING, &d->embedding, sizeof d->embedding, "table is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_RMSNORM, &d->rmsnorm, sizeof d->rmsnorm, "x is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_ROPE, &d->rope, sizeof d->rope, "x is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_SILU_MUL, &d->silu_mul, sizeof d->silu_mul, "gate is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_ADD, &d->add, sizeof d->add, "a is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_ARGMAX, &d->argmax, sizeof d->argmax, "x is NULL"};
    e[n++] = (op_entry_t){PAGODA_OP_SOFTMAX, &d->softmax, sizeof d->softmax, "x is NULL"};
    return n;
}

static void test_supports_without_pointers(void **state) {
    (void)state;
    dense_descriptors_t d;
    op_entry_t e[8];
    const size_t n = op_entries(&d, e);
    for (size_t i = 0; i < n; ++i) {
        pagoda_status_t s = test_cpu_supports(e[i].op, e[i].args);
        if (s != PAGODA_OK)
            fail_msg("supports(%s) with NULL pointers: %s: %s", pagoda_op_name(e[i].op),
                     pagoda_status_string(s), pagoda_last_error_message());
    }
}

static void test_null_and_short_structs(void **state) {
    (void)state;
    dense_descriptors_t d;
    op_entry_t e[8];
    const size_t n = op_entries(&d, e);
    for (size_t i = 0; i < n; ++i) {
        pagoda_clear_error();
        test_expect_failure(test_cpu_supports(e[i].op, NULL), PAGODA_ERR_INVALID_ARGUMENT,
                            pagoda_op_name(e[i].op));
        assert_int_equal(test_cpu_launch(e[i].op, NULL), PAGODA_ERR_INVALID_ARGUMENT);

        uint32_t *size = (uint32_t *)e[i].args;
        *size = 8; /* older than any ABI */
        test_cpu_expect_rejected(e[i].op, e[i].args, PAGODA_ERR_INVALID_ARGUMENT, "struct_size");
        assert_int_equal(test_cpu_launch(e[i].op, e[i].args), PAGODA_ERR_INVALID_ARGUMENT);
        *size = (uint32_t)e[i].size;
    }
}

/* A caller built against a later header passes a larger struct. Its extra fields are zero when
 * it asks for nothing this backend does not know, and the op runs; a nonzero one is refused as
 * unsupported, by supports and launch alike, before anything is written (ops.h). */
static void test_larger_struct(void **state) {
    (void)state;
    struct {
        pagoda_op_add_t add;
        unsigned char future_fields[32];
    } newer;
    memset(&newer, 0, sizeof newer);
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, out[4] = {0};
    newer.add.struct_size = sizeof newer;
    newer.add.n = 4;
    newer.add.a = a;
    newer.add.b = b;
    newer.add.out = out;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ADD, &newer));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ADD, &newer));
    assert_true(out[0] == 11.0f && out[3] == 44.0f);

    memset(out, 0, sizeof out);
    newer.future_fields[31] = 0x5a;
    char needle[160];
    snprintf(needle, sizeof needle,
             "add: the descriptor sets fields this backend does not know (struct_size %zu > %zu",
             sizeof newer, sizeof newer.add);
    test_cpu_expect_rejected(PAGODA_OP_ADD, &newer, PAGODA_ERR_UNSUPPORTED, needle);
    test_expect_failure(test_cpu_launch(PAGODA_OP_ADD, &newer), PAGODA_ERR_UNSUPPORTED, needle);
    assert_true(out[0] == 0.0f && out[3] == 0.0f);
}

static void test_launch_names_null_pointer(void **state) {
    (void)state;
    dense_descriptors_t d;
    op_entry_t e[8];
    const size_t n = op_entries(&d, e);
    for (size_t i = 0; i < n; ++i) {
        pagoda_clear_error();
        pagoda_status_t s = test_cpu_launch(e[i].op, e[i].args);
        if (s != PAGODA_ERR_INVALID_ARGUMENT)
            fail_msg("launch(%s) with NULL pointers returned %s", pagoda_op_name(e[i].op),
                     pagoda_status_string(s));
        if (strstr(pagoda_last_error_message(), e[i].null_field) == NULL)
            fail_msg("launch(%s): message '%s' does not say '%s'", pagoda_op_name(e[i].op),
                     pagoda_last_error_message(), e[i].null_field);
    }
}

/* ABI 1.1 appended the activation types (act_dtype; EMBEDDING's out_dtype). A 1.0 caller's
 * struct ends before them: it is accepted, and the op runs on f32. */
static void test_abi_1_0_structs_without_act_dtype(void **state) {
    (void)state;
    dense_descriptors_t d;
    fill_descriptors(&d);
    d.embedding.struct_size = (uint32_t)offsetof(pagoda_op_embedding_t, out_dtype);
    d.rmsnorm.struct_size = (uint32_t)offsetof(pagoda_op_rmsnorm_t, act_dtype);
    d.rope.struct_size = (uint32_t)offsetof(pagoda_op_rope_t, act_dtype);
    d.silu_mul.struct_size = (uint32_t)offsetof(pagoda_op_silu_mul_t, act_dtype);
    d.add.struct_size = (uint32_t)offsetof(pagoda_op_add_t, act_dtype);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_EMBEDDING, &d.embedding));
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_RMSNORM, &d.rmsnorm));
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ROPE, &d.rope));
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_SILU_MUL, &d.silu_mul));
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ADD, &d.add));

    /* The bytes past a short struct_size are not read: garbage there must not turn it bf16. */
    pagoda_op_add_t old;
    memset(&old, 0xff, sizeof old);
    float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, 0.25f, 0.125f, 1e-3f}, out[4] = {0};
    old.struct_size = (uint32_t)offsetof(pagoda_op_add_t, act_dtype);
    old.n = 4;
    old.a = a;
    old.b = b;
    old.out = out;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ADD, &old));
    for (int i = 0; i < 4; ++i) assert_true(out[i] == a[i] + b[i]);
}

/* Activation types: F32, BF16, F16 or 0 pass; a defined non-float type or an unknown value is
 * unsupported, named by its field. */
static void test_act_dtype_values(void **state) {
    (void)state;
    dense_descriptors_t d;
    fill_descriptors(&d);
    struct {
        pagoda_op_t op;
        void *args;
        pagoda_dtype_t *field;
        const char *name;
    } fields[] = {
        {PAGODA_OP_EMBEDDING, &d.embedding, &d.embedding.out_dtype, "embedding: out_dtype"},
        {PAGODA_OP_RMSNORM, &d.rmsnorm, &d.rmsnorm.act_dtype, "rmsnorm: act_dtype"},
        {PAGODA_OP_ROPE, &d.rope, &d.rope.act_dtype, "rope: act_dtype"},
        {PAGODA_OP_SILU_MUL, &d.silu_mul, &d.silu_mul.act_dtype, "silu_mul: act_dtype"},
        {PAGODA_OP_ADD, &d.add, &d.add.act_dtype, "add: act_dtype"},
    };
    static const pagoda_dtype_t good[] = {PAGODA_DTYPE_INVALID, PAGODA_DTYPE_F32,
                                          PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const pagoda_dtype_t bad[] = {PAGODA_DTYPE_I32, PAGODA_DTYPE_I64, PAGODA_DTYPE_U8,
                                         (pagoda_dtype_t)99};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; ++f) {
        for (size_t g = 0; g < sizeof good / sizeof good[0]; ++g) {
            *fields[f].field = good[g];
            pagoda_status_t s = test_cpu_supports(fields[f].op, fields[f].args);
            if (s != PAGODA_OK)
                fail_msg("%s = %d refused: %s", fields[f].name, (int)good[g],
                         pagoda_last_error_message());
        }
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
            *fields[f].field = bad[b];
            test_cpu_expect_rejected(fields[f].op, fields[f].args, PAGODA_ERR_UNSUPPORTED,
                                     fields[f].name);
        }
        *fields[f].field = PAGODA_DTYPE_INVALID;
    }
}

/* Extents are counted in the activation type's bytes: n elements whose f32 bytes overflow fit
 * as bf16. */
static void test_act_extent_uses_element_size(void **state) {
    (void)state;
    pagoda_op_add_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.n = INT64_MAX / 3;
    test_cpu_expect_rejected(PAGODA_OP_ADD, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "does not fit in the address space");
    a.act_dtype = PAGODA_DTYPE_BF16;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ADD, &a));
    a.act_dtype = PAGODA_DTYPE_F16;
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_ADD, &a));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supports_without_pointers),
        cmocka_unit_test(test_null_and_short_structs),
        cmocka_unit_test(test_larger_struct),
        cmocka_unit_test(test_launch_names_null_pointer),
        cmocka_unit_test(test_abi_1_0_structs_without_act_dtype),
        cmocka_unit_test(test_act_dtype_values),
        cmocka_unit_test(test_act_extent_uses_element_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
