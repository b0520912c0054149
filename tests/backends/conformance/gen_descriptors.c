/* Descriptor agreement: for each op (SOFTCAP and ABI 1.8's new fields included), a valid
 * descriptor and that descriptor broken one field at a time (sizes below 1, strides shorter
 * than their rows, types that are not types or that ops.h does not know, unknown flags and enum
 * values, a struct_size too small to hold the fields). Every backend's `supports` must give
 * the reference's status for each, so a host sees the same accept/reject decisions whichever
 * backend it asks. */
#include <math.h>
#include <string.h>

#include "conformance.h"

/* A mutation of the base descriptor `base` of type T named `field`, expected valid or not. */
#define CHECK_MUTATION(T, op, base, valid, label, statement) \
    do {                                                     \
        T a_ = (base);                                       \
        T *a = &a_;                                          \
        statement;                                           \
        conf_check_supports(label, op, a, valid, tally);     \
    } while (0)

static const pagoda_dtype_t kUnknownType = (pagoda_dtype_t)99;

static void matmul_descriptors(conf_tally_t *tally) {
    static const pagoda_dtype_t weights[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (size_t i = 0; i < 3; ++i) {
        pagoda_op_matmul_t b;
        memset(&b, 0, sizeof b);
        b.struct_size = sizeof b;
        b.x_dtype = b.y_dtype = PAGODA_DTYPE_F32;
        b.w_dtype = weights[i];
        b.m = 4;
        b.n = 24;
        b.k = 40;
        const pagoda_op_t op = PAGODA_OP_MATMUL;
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 1, "valid", (void)a);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 1, "padded strides", a->ldx = 41; a->ldw = 48; a->ldy = 25);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 1, "accumulate", a->flags = PAGODA_MATMUL_ACCUMULATE);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 1, "m = 1", a->m = 1);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 1, "m = 4096", a->m = 4096);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "m = 0", a->m = 0);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "n = 0", a->n = 0);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "k = 0", a->k = 0);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "k = -3", a->k = -3);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "ldx < k", a->ldx = 39);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "ldw < k", a->ldw = 7);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "ldy < n", a->ldy = 23);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "w_dtype invalid", a->w_dtype = PAGODA_DTYPE_INVALID);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "w_dtype unknown", a->w_dtype = kUnknownType);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "w_dtype i8", a->w_dtype = PAGODA_DTYPE_I8);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "x_dtype invalid", a->x_dtype = PAGODA_DTYPE_INVALID);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "y_dtype i32", a->y_dtype = PAGODA_DTYPE_I32);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "unknown flag", a->flags = 0x10);
        CHECK_MUTATION(pagoda_op_matmul_t, op, b, 0, "struct_size 4", a->struct_size = 4);
    }
}

static void embedding_descriptors(conf_tally_t *tally) {
    pagoda_op_embedding_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.table_dtype = PAGODA_DTYPE_BF16;
    b.vocab_size = 1000;
    b.dim = 64;
    b.n_tokens = 5;
    const pagoda_op_t op = PAGODA_OP_EMBEDDING;
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 1, "f16, padded", a->table_dtype = PAGODA_DTYPE_F16; a->ldo = 70);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "vocab 0", a->vocab_size = 0);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "dim 0", a->dim = 0);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "n_tokens 0", a->n_tokens = 0);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "ldo < dim", a->ldo = 63);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "table invalid", a->table_dtype = PAGODA_DTYPE_INVALID);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "table unknown", a->table_dtype = kUnknownType);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "table i32", a->table_dtype = PAGODA_DTYPE_I32);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "struct_size 8", a->struct_size = 8);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 1, "scale 48", a->scale = 48.0f);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "scale inf", a->scale = INFINITY);
    CHECK_MUTATION(pagoda_op_embedding_t, op, b, 0, "scale nan", a->scale = NAN);
}

static void rmsnorm_descriptors(conf_tally_t *tally) {
    pagoda_op_rmsnorm_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.weight_dtype = PAGODA_DTYPE_F32;
    b.rows = 3;
    b.dim = 100;
    b.eps = 1e-5f;
    const pagoda_op_t op = PAGODA_OP_RMSNORM;
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 1, "bf16, padded", a->weight_dtype = PAGODA_DTYPE_BF16; a->ldx = 101; a->ld_residual = 128; a->ldo = 100);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "rows 0", a->rows = 0);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "dim 0", a->dim = 0);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "ldx < dim", a->ldx = 99);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "ld_residual < dim", a->ld_residual = 50);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "ldo < dim", a->ldo = 1);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "weight invalid", a->weight_dtype = PAGODA_DTYPE_INVALID);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "weight unknown", a->weight_dtype = kUnknownType);
    CHECK_MUTATION(pagoda_op_rmsnorm_t, op, b, 0, "weight u8", a->weight_dtype = PAGODA_DTYPE_U8);
}

static void rope_descriptors(conf_tally_t *tally) {
    pagoda_op_rope_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.n_tokens = 7;
    b.n_heads = 4;
    b.head_dim = 64;
    b.theta = 10000.0f;
    b.factor = 8.0f;
    b.low_freq_factor = 1.0f;
    b.high_freq_factor = 4.0f;
    b.original_max_position = 8192;
    const pagoda_op_t op = PAGODA_OP_ROPE;
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 1, "interleaved, llama3", a->layout = PAGODA_ROPE_INTERLEAVED; a->scaling = PAGODA_ROPE_SCALING_LLAMA3);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 1, "partial, strided", a->rot_dim = 32; a->token_stride = 300);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "rot_dim odd", a->rot_dim = 31);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "rot_dim > head_dim", a->rot_dim = 66);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "n_tokens 0", a->n_tokens = 0);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "n_heads 0", a->n_heads = 0);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "head_dim 0", a->head_dim = 0);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "token_stride short", a->token_stride = 255);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "layout 7", a->layout = (pagoda_rope_layout_t)7);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "scaling 9", a->scaling = (pagoda_rope_scaling_t)9);
    CHECK_MUTATION(pagoda_op_rope_t, op, b, 0, "struct_size 4", a->struct_size = 4);
}

static void elementwise_descriptors(conf_tally_t *tally) {
    pagoda_op_silu_mul_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.rows = 3;
    s.dim = 50;
    const pagoda_op_t op = PAGODA_OP_SILU_MUL;
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 1, "fused", a->ld_in = 100);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "rows 0", a->rows = 0);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "dim 0", a->dim = 0);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "ld_in < dim", a->ld_in = 49);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "ldo < dim", a->ldo = 3);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 1, "gelu_tanh",
                   a->activation = PAGODA_GLU_GELU_TANH);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "activation 2", a->activation = 2);
    CHECK_MUTATION(pagoda_op_silu_mul_t, op, s, 0, "activation -1", a->activation = -1);

    pagoda_op_add_t d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.n = 17;
    CHECK_MUTATION(pagoda_op_add_t, PAGODA_OP_ADD, d, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_add_t, PAGODA_OP_ADD, d, 0, "n 0", a->n = 0);
    CHECK_MUTATION(pagoda_op_add_t, PAGODA_OP_ADD, d, 0, "n -1", a->n = -1);
    CHECK_MUTATION(pagoda_op_add_t, PAGODA_OP_ADD, d, 0, "struct_size 2", a->struct_size = 2);
}

static void rowwise_descriptors(conf_tally_t *tally) {
    pagoda_op_argmax_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.rows = 2;
    m.cols = 32000;
    CHECK_MUTATION(pagoda_op_argmax_t, PAGODA_OP_ARGMAX, m, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_argmax_t, PAGODA_OP_ARGMAX, m, 1, "padded", a->ldx = 32064);
    CHECK_MUTATION(pagoda_op_argmax_t, PAGODA_OP_ARGMAX, m, 0, "rows 0", a->rows = 0);
    CHECK_MUTATION(pagoda_op_argmax_t, PAGODA_OP_ARGMAX, m, 0, "cols 0", a->cols = 0);
    CHECK_MUTATION(pagoda_op_argmax_t, PAGODA_OP_ARGMAX, m, 0, "ldx < cols", a->ldx = 100);

    pagoda_op_softmax_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.rows = 2;
    s.cols = 100;
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 1, "scaled, padded", a->scale = 0.5f; a->ldx = 101; a->ldo = 128);
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 0, "rows 0", a->rows = 0);
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 0, "cols 0", a->cols = 0);
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 0, "ldx < cols", a->ldx = 99);
    CHECK_MUTATION(pagoda_op_softmax_t, PAGODA_OP_SOFTMAX, s, 0, "ldo < cols", a->ldo = 10);
}

static void paged_descriptors(conf_tally_t *tally) {
    pagoda_op_kv_write_t w;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    w.cache_dtype = PAGODA_DTYPE_BF16;
    w.n_tokens = 9;
    w.n_kv_heads = 8;
    w.head_dim = 128;
    w.block_size = 16;
    w.num_blocks = 100;
    const pagoda_op_t kw = PAGODA_OP_KV_WRITE;
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 1, "no tokens", a->n_tokens = 0);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 1, "block 128, strided", a->block_size = 128; a->k_token_stride = 1030; a->v_token_stride = 2048);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "n_kv_heads 0", a->n_kv_heads = 0);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "head_dim 0", a->head_dim = 0);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "block_size 0", a->block_size = 0);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "block_size 129", a->block_size = 129);
    /* Sizes ops.h's list of dimensions ("…") leaves open; the CPU backend accepts them today. */
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, -1, "num_blocks 0", a->num_blocks = 0);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "n_tokens -1", a->n_tokens = -1);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "k stride short", a->k_token_stride = 1023);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "cache invalid", a->cache_dtype = PAGODA_DTYPE_INVALID);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "cache unknown", a->cache_dtype = kUnknownType);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "cache i8", a->cache_dtype = PAGODA_DTYPE_I8);
    CHECK_MUTATION(pagoda_op_kv_write_t, kw, w, 0, "layout 7", a->layout = (pagoda_kv_layout_t)7);

    pagoda_op_paged_attention_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.cache_dtype = PAGODA_DTYPE_F16;
    p.causal = 1;
    p.n_seqs = 4;
    p.n_q_heads = 32;
    p.n_kv_heads = 8;
    p.head_dim = 128;
    p.block_size = 16;
    p.num_blocks = 1000;
    p.max_blocks_per_seq = 64;
    p.scale = 0.088f;
    const pagoda_op_t pa = PAGODA_OP_PAGED_ATTENTION;
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 1, "window, strided, f32", a->sliding_window = 4096; a->q_token_stride = 4100; a->out_token_stride = 4096; a->cache_dtype = PAGODA_DTYPE_F32);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 1, "MQA, block 32, bf16", a->n_kv_heads = 1; a->block_size = 32; a->cache_dtype = PAGODA_DTYPE_BF16; a->max_context_len = 1024);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "heads 6/4", a->n_q_heads = 6; a->n_kv_heads = 4);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "n_kv_heads 0", a->n_kv_heads = 0);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "head_dim 0", a->head_dim = 0);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "block_size 0", a->block_size = 0);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "block_size 129", a->block_size = 129);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "sliding_window -2", a->sliding_window = -2);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "q stride 3", a->q_token_stride = 3);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "out stride short", a->out_token_stride = 4095);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "cache i8", a->cache_dtype = PAGODA_DTYPE_I8);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "cache invalid", a->cache_dtype = PAGODA_DTYPE_INVALID);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "layout 7", a->layout = (pagoda_kv_layout_t)7);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "struct_size 8", a->struct_size = 8);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 1, "softcap 50", a->softcap = 50.0f);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "softcap -1", a->softcap = -1.0f);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "softcap nan", a->softcap = NAN);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, 0, "softcap inf", a->softcap = INFINITY);
    /* Not pinned down by ops.h either way; backends must still agree. */
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, -1, "max_blocks_per_seq 0", a->max_blocks_per_seq = 0);
    CHECK_MUTATION(pagoda_op_paged_attention_t, pa, p, -1, "n_seqs 0", a->n_seqs = 0);
}

static void copy_descriptors(conf_tally_t *tally) {
    pagoda_op_copy_blocks_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.n_caches = 4;
    b.block_bytes = 65536;
    b.n_pairs = 3;
    b.src_num_blocks = 100;
    b.dst_num_blocks = 50;
    for (int swap = 0; swap < 2; ++swap) {
        const pagoda_op_t op = swap ? PAGODA_OP_SWAP_BLOCKS : PAGODA_OP_COPY_BLOCKS;
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 1, "valid", (void)a);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 1, "no pairs", a->n_pairs = 0);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, -1, "n_caches 0", a->n_caches = 0);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 0, "block_bytes 0", a->block_bytes = 0);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 0, "n_pairs -1", a->n_pairs = -1);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 0, "src_num_blocks 0", a->src_num_blocks = 0);
        CHECK_MUTATION(pagoda_op_copy_blocks_t, op, b, 0, "struct_size 4", a->struct_size = 4);
    }
    CHECK_MUTATION(pagoda_op_copy_blocks_t, PAGODA_OP_SWAP_BLOCKS, b, 1, "swap in", a->direction = PAGODA_SWAP_IN);
    CHECK_MUTATION(pagoda_op_copy_blocks_t, PAGODA_OP_SWAP_BLOCKS, b, 0, "direction 5", a->direction = (pagoda_swap_direction_t)5);
}

static void softcap_descriptors(conf_tally_t *tally) {
    pagoda_op_softcap_t b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.n = 256000;
    b.cap = 30.0f;
    const pagoda_op_t op = PAGODA_OP_SOFTCAP;
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 1, "valid", (void)a);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 1, "f32", a->dtype = PAGODA_DTYPE_F32);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 1, "bf16", a->dtype = PAGODA_DTYPE_BF16);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 1, "f16, n 1",
                   a->dtype = PAGODA_DTYPE_F16; a->n = 1);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "n 0", a->n = 0);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "cap 0", a->cap = 0.0f);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "cap -30", a->cap = -30.0f);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "cap inf", a->cap = INFINITY);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "cap nan", a->cap = NAN);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "dtype i32", a->dtype = PAGODA_DTYPE_I32);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "dtype unknown", a->dtype = kUnknownType);
    CHECK_MUTATION(pagoda_op_softcap_t, op, b, 0, "struct_size 4", a->struct_size = 4);
}

void conf_cases_descriptors(conf_tally_t *tally) {
    matmul_descriptors(tally);
    embedding_descriptors(tally);
    rmsnorm_descriptors(tally);
    rope_descriptors(tally);
    elementwise_descriptors(tally);
    rowwise_descriptors(tally);
    paged_descriptors(tally);
    copy_descriptors(tally);
    softcap_descriptors(tally);
    /* No struct at all, and ops this header does not define. */
    conf_check_supports("NULL args", PAGODA_OP_MATMUL, NULL, 0, tally);
    conf_check_supports("NULL args", PAGODA_OP_PAGED_ATTENTION, NULL, 0, tally);
    pagoda_op_add_t add;
    memset(&add, 0, sizeof add);
    add.struct_size = sizeof add;
    add.n = 4;
    conf_check_supports("op 0", PAGODA_OP_INVALID, &add, 0, tally);
    conf_check_supports("op 99", (pagoda_op_t)99, &add, 0, tally);
}
