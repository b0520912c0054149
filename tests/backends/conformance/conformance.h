/* Backend conformance, the way ggml's test-backend-ops works: every op of ops.h on many random
 * cases, run on the reference (the CPU backend as built) and on each backend under test, with
 * the outputs compared. Inputs reach each backend through its own memory functions
 * (buffer_alloc, copy, host_buffer_alloc), so the same harness drives a GPU.
 *
 * A case is a short list of launches (steps) over a set of tensors. Each tensor has host
 * contents that are uploaded before the first step and, for outputs, a way to compare what the
 * backend left there with what the reference left there. Tensors reach the op structs through
 * bindings: a pointer field of a step's struct, an entry of COPY/SWAP_BLOCKS' cache arrays, or a
 * pointer field of a nested host struct a step's struct points to (KV_WRITE's k_rope). */
#ifndef PAGODA_CONFORMANCE_H
#define PAGODA_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include "test_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Backends                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* A backend instance the harness drives: the reference or one under test. */
typedef struct conf_backend {
    const char *label;                    /* "cpu (reference)", "cpu isa=portable", "cuda" */
    const pagoda_backend_iface_t *iface;
    int32_t device;                       /* the device every case runs on (0 in the test) */
    /* The last error message of a failed call on this thread. */
    const char *(*last_error)(void);
} conf_backend_t;

/* The reference: the CPU backend through the registry (test_cpu_iface in the cmocka test; the
 * program loads it by path or by discovery). Defined by each binary's backends file
 * (conformance_backends.c, program/program_backends.c). */
const conf_backend_t *conf_reference(void);
/* The backends under test, loaded once; `*count` of them. In the cmocka test: the CPU backend
 * with isa=portable and the CUDA backend; in the program: the plugin it was given. A backend that cannot run
 * here (the CUDA plugin not built, or no device) is left out with a "skipping <name>: <reason>" line on
 * stderr, unless PAGODA_CONFORMANCE_REQUIRE_CUDA=1, which makes a missing CUDA backend fail. */
const conf_backend_t *const *conf_backends_under_test(size_t *count);
/* Destroys the instances conf_backends_under_test created. */
void conf_backends_release(void);

/* A plugin opened from its file with the suite's own host table (conformance_plugin.c). */
typedef struct conf_plugin {
    void *library;
    pagoda_backend_host_t host; /* valid until the instance is destroyed */
    const pagoda_backend_iface_t *iface;
} conf_plugin_t;
/* Opens `path` and starts an instance with `config` (NULL: none); `label` names it in the
 * plugin's log lines. PAGODA_OK, or the entry's status (PAGODA_ERR_NOT_FOUND: no device of its
 * kind here), PAGODA_ERR_NOT_A_PLUGIN or PAGODA_ERR_ABI_MISMATCH, with the reason in `why`. */
pagoda_status_t conf_plugin_open(conf_plugin_t *p, const char *label, const char *path,
                                 const char *config, char *why, size_t why_size);
/* Destroys the instance; `unload` also closes the library. */
void conf_plugin_close(conf_plugin_t *p, int unload);
/* The message of the plugin's last set_error on this thread. */
const char *conf_plugin_last_error(void);

/* ------------------------------------------------------------------------------------------ */
/* Cases                                                                                       */
/* ------------------------------------------------------------------------------------------ */

enum {
    CONF_MAX_TENSORS = 16,
    CONF_MAX_STEPS = 4,
    CONF_MAX_BINDINGS = 32,
    CONF_MAX_CACHES = 8,
    CONF_MAX_NESTED = 4
};

/* Any op's argument struct. */
typedef union conf_args {
    pagoda_op_matmul_t matmul;
    pagoda_op_embedding_t embedding;
    pagoda_op_rmsnorm_t rmsnorm;
    pagoda_op_rope_t rope;
    pagoda_op_silu_mul_t silu_mul;
    pagoda_op_add_t add;
    pagoda_op_argmax_t argmax;
    pagoda_op_softmax_t softmax;
    pagoda_op_kv_write_t kv_write;
    pagoda_op_paged_attention_t attention;
    pagoda_op_copy_blocks_t copy;
    pagoda_op_sample_t sample;
    pagoda_op_attention_merge_t merge;
    pagoda_op_softcap_t softcap;
    pagoda_op_moe_route_t moe_route;
    pagoda_op_moe_matmul_t moe_matmul;
} conf_args_t;

/* Where a tensor lives on the backend. */
typedef enum conf_place {
    CONF_DEVICE = 0,      /* buffer_alloc on the backend's device (conf_backend_t::device) */
    CONF_HOST_PINNED = 1  /* host_buffer_alloc (the host side of SWAP_BLOCKS) */
} conf_place_t;

/* How an output is compared with the reference's. */
typedef enum conf_compare {
    CONF_INPUT = 0,   /* not compared */
    CONF_F32,         /* f32 values, normwise relative error at most `tolerance` */
    CONF_EXACT,       /* every byte equal (caches after KV_WRITE, copies, swaps) */
    CONF_ARGMAX,      /* i32 indices equal, or a near-tie of their scores (see conf_tensor_t) */
    CONF_CUSTOM,      /* the op's own rule (conf_custom_t), where outputs may rightly differ */
    CONF_BF16,        /* bf16 values, compared as CONF_F32 after widening */
    CONF_F16          /* f16 values, likewise */
} conf_compare_t;

struct conf_tensor;

/* A comparison an op brings along when equality (or a tolerance on values) is the wrong test,
 * such as SAMPLE's draws, which may move across a boundary of the CDF under rounding. */
typedef struct conf_custom {
    /* Returns 1 when `got` is acceptable next to the reference's `ref`, else 0 with `why`. */
    int (*compare)(const struct conf_custom *self, const struct conf_tensor *t, const void *ref,
                   const void *got, char *why, size_t why_size);
    /* Changes `got` so that `compare` must reject it (PAGODA_CONFORMANCE_PERTURB); returns 0
     * when it cannot. */
    int (*perturb)(const struct conf_custom *self, const struct conf_tensor *t, const void *ref,
                   void *got);
    void *context; /* the op's data, such as the inputs the rule reads; owned by the case */
} conf_custom_t;

typedef struct conf_tensor {
    const char *name;        /* the op field it stands for, for messages */
    void *init;              /* host contents uploaded before the first step; owned by the case */
    size_t bytes;
    conf_place_t place;
    conf_compare_t compare;
    double tolerance;        /* CONF_F32, CONF_BF16, CONF_F16 */
    /* CONF_ARGMAX: the tensor of scores `[rows, tie_ld]` (f32) the indices were taken over: an
     * input (its contents are the scores) or an earlier step's output (the reference's result
     * is used). Two indices whose scores differ by at most tolerance · max |score| of the row
     * count as a near-tie: they may swap when the scores come out of a computation. */
    int tie_tensor;
    int64_t tie_cols, tie_ld;
    const conf_custom_t *custom; /* CONF_CUSTOM; owned by the case (conf_own) */
} conf_tensor_t;

/* Which tensor's address goes where. */
typedef enum conf_binding_kind {
    CONF_BIND_FIELD = 0,   /* *(void **)((char *)&args + offset) = address */
    CONF_BIND_SRC_CACHE,   /* copy.src_caches[index] = address */
    CONF_BIND_DST_CACHE,   /* copy.dst_caches[index] = address */
    CONF_BIND_NESTED_FIELD, /* *(void **)((char *)run's copy of nested[nested] + offset) = address */
    CONF_BIND_TABLE_ENTRY  /* entry `index` of tensor `table`, a device array of pointers
                            * (MOE_MATMUL's experts), = address; written before the first step */
} conf_binding_kind_t;

typedef struct conf_binding {
    int step, tensor;
    conf_binding_kind_t kind;
    size_t offset_or_index;
    size_t byte_offset; /* added to the tensor's address (a fused buffer's second half) */
    int nested;         /* CONF_BIND_NESTED_FIELD: which of the case's nested structs */
    int table;          /* CONF_BIND_TABLE_ENTRY: the tensor holding the pointers */
} conf_binding_t;

/* A host struct that a pointer field of a step's struct points to, with device addresses inside
 * (KV_WRITE's k_rope: host memory read at the launch, its positions and freq_factors device
 * buffers). The step's field points to `host`, which `supports` reads; each run hands the
 * backend its own copy of `host`, with the fields bound by conf_bind_nested set to that
 * backend's buffers, points the step's field at the copy, and spoils the copy once the launch
 * returns (ops.h: read during the launch only). */
typedef struct conf_nested {
    int step;
    size_t offset; /* of the pointer field in the step's struct */
    void *host;    /* the template, its bound fields left NULL; owned by the case */
    size_t bytes;
} conf_nested_t;

typedef struct conf_step {
    pagoda_op_t op;
    conf_args_t args;  /* pointers filled by the bindings at run time; host pointers as given */
} conf_step_t;

typedef struct conf_case {
    char label[256];
    int n_steps;
    conf_step_t steps[CONF_MAX_STEPS];
    int n_tensors;
    conf_tensor_t tensors[CONF_MAX_TENSORS];
    int n_bindings;
    conf_binding_t bindings[CONF_MAX_BINDINGS];
    int n_nested;
    conf_nested_t nested[CONF_MAX_NESTED];
    /* What the reference must return (PAGODA_OK unless the case holds a bad id on purpose),
     * so that a generator that made an invalid case by mistake is caught. */
    pagoda_status_t expect;
    /* 1: a backend under test may refuse the case as unsupported (what ops.h lets a backend
     * leave out, such as cache parallelism); the case is then skipped for it, with a note. */
    int may_refuse;
    /* Host memory the case owns besides tensor contents (block_pairs, tie scores); freed
     * with the case. */
    void *owned[8];
    int n_owned;
} conf_case_t;

/* Starts an empty case; `label` is printf-style. */
void conf_case_init(conf_case_t *c, const char *label, ...);
/* Appends a step; returns its args to fill (struct_size is set). */
conf_args_t *conf_add_step(conf_case_t *c, pagoda_op_t op);
/* Appends a tensor whose contents `init` (malloc'd, `bytes` long) the case takes over;
 * returns its index. */
int conf_add_tensor(conf_case_t *c, const char *name, void *init, size_t bytes, conf_place_t place,
                    conf_compare_t compare, double tolerance);
/* Binds tensor `tensor` to the pointer field at `offset` of step `step`'s struct. */
void conf_bind(conf_case_t *c, int step, int tensor, size_t offset);
/* Like conf_bind with the address `byte_offset` bytes into the tensor. */
void conf_bind_at(conf_case_t *c, int step, int tensor, size_t offset, size_t byte_offset);
/* Binds tensor `tensor` to entry `index` of step `step`'s src_caches / dst_caches. */
void conf_bind_cache(conf_case_t *c, int step, int tensor, int is_destination, size_t index);
/* Points the pointer field at `offset` of step `step`'s struct to `host`, a nested struct of
 * `bytes` bytes (malloc'd; the case takes it over), whose device pointers are bound with
 * conf_bind_nested. Returns its index. */
int conf_add_nested(conf_case_t *c, int step, size_t offset, void *host, size_t bytes);
/* Binds tensor `tensor` to the pointer field at `offset` of nested struct `nested`. */
void conf_bind_nested(conf_case_t *c, int nested, int tensor, size_t offset);
/* Sets entry `index` of tensor `table` (a device array of pointers, every entry not set NULL)
 * to the address `byte_offset` bytes into tensor `tensor`. */
void conf_bind_table_entry(conf_case_t *c, int table, size_t index, int tensor,
                           size_t byte_offset);
/* Hands host memory to the case, to be freed with it; returns `p`. */
void *conf_own(conf_case_t *c, void *p);
void conf_case_free(conf_case_t *c);

/* Tensor helpers: `n` random f32 in [lo, hi), and the same converted to `dtype` (the kept
 * values go to `kept` if not NULL). Both return malloc'd memory. */
float *conf_random_f32(test_rng_t *rng, size_t n, float lo, float hi);
void *conf_random_typed(test_rng_t *rng, pagoda_dtype_t dtype, size_t n, float lo, float hi);

/* `values` values of block type `t` (whole blocks): random bytes, the f16 scales (d, and dmin
 * for the K types with mins) replaced by random finite ones, so every bit pattern of the values
 * is met (gen_quant.c). malloc'd. */
void *conf_random_blocks(test_rng_t *rng, pagoda_dtype_t t, int64_t values);

/* The f32 tolerance of an op whose weights or cache are `dtype`, against the reference: two
 * f32 computations differ only in rounding order; a backend may round half-precision operands'
 * partners (queries, probabilities) to the same half type on tensor cores. */
double conf_tolerance(pagoda_dtype_t dtype);

/* ------------------------------------------------------------------------------------------ */
/* Running and comparing                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* What one backend produced for a case: the status of the first failing launch or of the final
 * synchronisation, its message, and a copy of every compared tensor. */
typedef struct conf_result {
    pagoda_status_t status;
    char message[512];
    void *outputs[CONF_MAX_TENSORS];
} conf_result_t;

/* Runs every step of `c` on `b` on a fresh stream. Fails the test only when the harness itself
 * cannot run (allocation, copies); a failing op is reported in `out->status`. */
void conf_run(const conf_backend_t *b, const conf_case_t *c, conf_result_t *out);
void conf_result_free(conf_result_t *r);

/* Compares one tensor (`scores`: CONF_ARGMAX's, else NULL; CONF_CUSTOM asks t->custom);
 * returns 1 when `got` matches `ref`, else 0 with `why` filled. */
int conf_compare_tensor(const conf_tensor_t *t, const void *ref, const void *got,
                        const float *scores, char *why, size_t why_size);
/* Changes `got` by a little more than the comparison of `t` tolerates, at one element, so that
 * conf_compare_tensor must reject it (PAGODA_CONFORMANCE_PERTURB); returns 0 when it cannot
 * (an empty tensor, a custom rule without a perturbation). */
int conf_perturb(const conf_tensor_t *t, const void *ref, void *got, const float *scores);

/* Counts of one test function's cases, comparisons that passed, and mismatches; and cases a
 * backend under test refused as unsupported where it may (`skipped`). The first mismatch and the
 * first skip are kept as text ("case 17: ...") for a summary line. Zero-initialise. */
typedef struct conf_tally {
    int cases, compared, failures;
    int skipped;
    char first_failure[768];
    char first_skip[512];
} conf_tally_t;

/* How the harness reports (the defaults suit the cmocka test):
 * `print_mismatches`: print each mismatch to stderr as it happens (default 1);
 * `unsupported_is_skip`: a backend under test answering PAGODA_ERR_UNSUPPORTED where the
 * reference accepts counts as a skip, not a mismatch (default 0: every backend must agree).
 * ops.h lets a backend leave ops, types and fields out so; pagoda-conformance reports it. */
void conf_set_reporting(int print_mismatches, int unsupported_is_skip);

/* Runs `c` on the reference and on every backend under test and compares statuses and outputs,
 * counting into `tally` (failures are printed as they happen). With PAGODA_CONFORMANCE_PERTURB=1
 * the check is turned around: each under-test output is perturbed slightly before the
 * comparison, and a comparison that still passes is the failure (proof that the harness looks
 * at the data). Frees the case. */
void conf_check_case(conf_case_t *c, conf_tally_t *tally);
/* Fails the calling test if the tally holds failures; prints a summary line either way. */
void conf_finish(const char *what, const conf_tally_t *tally);

/* Whether every backend's `supports` gives the reference's status for `op` with `args`;
 * `expect_valid` (1 or 0) also checks the reference's verdict (OK or not) so the lists stay
 * honest; -1 leaves the verdict open (ops.h does not decide it). */
void conf_check_supports(const char *label, pagoda_op_t op, const void *args, int expect_valid,
                         conf_tally_t *tally);

/* ------------------------------------------------------------------------------------------ */
/* Case generators, one file per op family                                                     */
/* ------------------------------------------------------------------------------------------ */

void conf_cases_matmul(conf_tally_t *tally);          /* gen_matmul.c */
void conf_cases_embedding(conf_tally_t *tally);       /* gen_dense.c */
void conf_cases_rmsnorm(conf_tally_t *tally);         /* gen_dense.c */
void conf_cases_rope(conf_tally_t *tally);            /* gen_rope.c */
void conf_cases_elementwise(conf_tally_t *tally);     /* gen_dense.c: silu_mul, add */
void conf_cases_softcap(conf_tally_t *tally);         /* gen_dense.c */
void conf_cases_rowwise(conf_tally_t *tally);         /* gen_rowwise.c: argmax, softmax */
void conf_cases_kv_write(conf_tally_t *tally);        /* gen_kv_write.c */
void conf_cases_paged_attention(conf_tally_t *tally); /* gen_paged.c */
void conf_cases_paged_attention_odd(conf_tally_t *tally); /* gen_paged.c: unusual shapes */
/* gen_paged.c: soft-capped scores (ABI 1.8) */
void conf_cases_paged_attention_softcap(conf_tally_t *tally);
void conf_cases_copy_blocks(conf_tally_t *tally);     /* gen_copy_blocks.c: copy and swap */
void conf_cases_descriptors(conf_tally_t *tally);     /* gen_descriptors.c: supports agreement */
void conf_cases_sample(conf_tally_t *tally);          /* gen_sample.c */
void conf_cases_quantized(conf_tally_t *tally);       /* gen_quant.c: block-type weights */
/* gen_attention_shards.c: PAGED_ATTENTION over a KV shard with lse, ATTENTION_MERGE */
void conf_cases_attention_shards(conf_tally_t *tally);
void conf_cases_moe(conf_tally_t *tally);             /* gen_moe.c: moe_route, moe_matmul */

#ifdef __cplusplus
}
#endif

#endif /* PAGODA_CONFORMANCE_H */
