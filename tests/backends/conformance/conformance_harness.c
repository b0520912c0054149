/* Building cases, running them on a backend through its own memory functions, and comparing
 * each backend under test with the reference. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* ------------------------------------------------------------------------------------------ */
/* Building                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void conf_case_init(conf_case_t *c, const char *label, ...) {
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, label);
    vsnprintf(c->label, sizeof c->label, label, ap);
    va_end(ap);
    c->expect = PAGODA_OK;
}

/* sizeof of each op's struct, for struct_size. */
static uint32_t args_size(pagoda_op_t op) {
    switch (op) {
        case PAGODA_OP_MATMUL: return sizeof(pagoda_op_matmul_t);
        case PAGODA_OP_EMBEDDING: return sizeof(pagoda_op_embedding_t);
        case PAGODA_OP_RMSNORM: return sizeof(pagoda_op_rmsnorm_t);
        case PAGODA_OP_ROPE: return sizeof(pagoda_op_rope_t);
        case PAGODA_OP_SILU_MUL: return sizeof(pagoda_op_silu_mul_t);
        case PAGODA_OP_ADD: return sizeof(pagoda_op_add_t);
        case PAGODA_OP_ARGMAX: return sizeof(pagoda_op_argmax_t);
        case PAGODA_OP_SOFTMAX: return sizeof(pagoda_op_softmax_t);
        case PAGODA_OP_KV_WRITE: return sizeof(pagoda_op_kv_write_t);
        case PAGODA_OP_PAGED_ATTENTION: return sizeof(pagoda_op_paged_attention_t);
        case PAGODA_OP_COPY_BLOCKS:
        case PAGODA_OP_SWAP_BLOCKS: return sizeof(pagoda_op_copy_blocks_t);
        case PAGODA_OP_SAMPLE: return sizeof(pagoda_op_sample_t);
        case PAGODA_OP_ATTENTION_MERGE: return sizeof(pagoda_op_attention_merge_t);
        case PAGODA_OP_SOFTCAP: return sizeof(pagoda_op_softcap_t);
        case PAGODA_OP_MOE_ROUTE: return sizeof(pagoda_op_moe_route_t);
        case PAGODA_OP_MOE_MATMUL: return sizeof(pagoda_op_moe_matmul_t);
        default: return 0;
    }
}

conf_args_t *conf_add_step(conf_case_t *c, pagoda_op_t op) {
    assert_true(c->n_steps < CONF_MAX_STEPS);
    conf_step_t *s = &c->steps[c->n_steps++];
    memset(s, 0, sizeof *s);
    s->op = op;
    /* Every op struct starts with struct_size. */
    const uint32_t size = args_size(op);
    memcpy(&s->args, &size, sizeof size);
    return &s->args;
}

int conf_add_tensor(conf_case_t *c, const char *name, void *init, size_t bytes, conf_place_t place,
                    conf_compare_t compare, double tolerance) {
    assert_true(c->n_tensors < CONF_MAX_TENSORS);
    conf_tensor_t *t = &c->tensors[c->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->init = init;
    t->bytes = bytes;
    t->place = place;
    t->compare = compare;
    t->tolerance = tolerance;
    return c->n_tensors++;
}

void conf_bind_at(conf_case_t *c, int step, int tensor, size_t offset, size_t byte_offset) {
    assert_true(c->n_bindings < CONF_MAX_BINDINGS);
    assert_true(byte_offset < c->tensors[tensor].bytes || byte_offset == 0);
    conf_binding_t *b = &c->bindings[c->n_bindings++];
    memset(b, 0, sizeof *b);
    b->step = step;
    b->tensor = tensor;
    b->kind = CONF_BIND_FIELD;
    b->offset_or_index = offset;
    b->byte_offset = byte_offset;
}

void conf_bind(conf_case_t *c, int step, int tensor, size_t offset) {
    conf_bind_at(c, step, tensor, offset, 0);
}

void conf_bind_cache(conf_case_t *c, int step, int tensor, int is_destination, size_t index) {
    assert_true(c->n_bindings < CONF_MAX_BINDINGS);
    assert_true(index < CONF_MAX_CACHES);
    conf_binding_t *b = &c->bindings[c->n_bindings++];
    memset(b, 0, sizeof *b);
    b->step = step;
    b->tensor = tensor;
    b->kind = is_destination ? CONF_BIND_DST_CACHE : CONF_BIND_SRC_CACHE;
    b->offset_or_index = index;
}

int conf_add_nested(conf_case_t *c, int step, size_t offset, void *host, size_t bytes) {
    assert_true(c->n_nested < CONF_MAX_NESTED);
    assert_true(step >= 0 && step < c->n_steps);
    assert_true(offset + sizeof host <= sizeof(conf_args_t));
    conf_nested_t *n = &c->nested[c->n_nested];
    n->step = step;
    n->offset = offset;
    n->host = host;
    n->bytes = bytes;
    memcpy((char *)&c->steps[step].args + offset, &host, sizeof host);
    return c->n_nested++;
}

void conf_bind_nested(conf_case_t *c, int nested, int tensor, size_t offset) {
    assert_true(c->n_bindings < CONF_MAX_BINDINGS);
    assert_true(nested >= 0 && nested < c->n_nested);
    assert_true(offset + sizeof(void *) <= c->nested[nested].bytes);
    conf_binding_t *b = &c->bindings[c->n_bindings++];
    memset(b, 0, sizeof *b);
    b->step = c->nested[nested].step;
    b->tensor = tensor;
    b->kind = CONF_BIND_NESTED_FIELD;
    b->offset_or_index = offset;
    b->nested = nested;
}

void conf_bind_table_entry(conf_case_t *c, int table, size_t index, int tensor,
                           size_t byte_offset) {
    assert_true(c->n_bindings < CONF_MAX_BINDINGS);
    assert_true((index + 1) * sizeof(void *) <= c->tensors[table].bytes);
    conf_binding_t *b = &c->bindings[c->n_bindings++];
    memset(b, 0, sizeof *b);
    b->step = -1; /* no step's: written once, before the first */
    b->tensor = tensor;
    b->kind = CONF_BIND_TABLE_ENTRY;
    b->offset_or_index = index;
    b->byte_offset = byte_offset;
    b->table = table;
}

void *conf_own(conf_case_t *c, void *p) {
    assert_true(c->n_owned < (int)(sizeof c->owned / sizeof c->owned[0]));
    c->owned[c->n_owned++] = p;
    return p;
}

void conf_case_free(conf_case_t *c) {
    for (int t = 0; t < c->n_tensors; ++t) free(c->tensors[t].init);
    for (int i = 0; i < c->n_owned; ++i) free(c->owned[i]);
    for (int i = 0; i < c->n_nested; ++i) free(c->nested[i].host);
    c->n_tensors = c->n_owned = c->n_nested = 0;
}

float *conf_random_f32(test_rng_t *rng, size_t n, float lo, float hi) {
    float *p = test_xmalloc(n * sizeof *p);
    test_fill_uniform(rng, p, n, lo, hi);
    return p;
}

void *conf_random_typed(test_rng_t *rng, pagoda_dtype_t dtype, size_t n, float lo, float hi) {
    float *values = conf_random_f32(rng, n, lo, hi);
    void *out = test_xmalloc(n * pagoda_dtype_size(dtype));
    test_convert_weights(dtype, values, n, out, NULL);
    free(values);
    return out;
}

double conf_tolerance(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return 1e-2; /* 8 significant bits: 2^-8 ≈ 4e-3 per rounding */
        case PAGODA_DTYPE_F16: return 4e-3;  /* 11 significant bits: 2^-11 ≈ 5e-4 per rounding */
        default: return 1e-5;                /* f32 against f32: summation order only */
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Running                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* A harness call that must succeed; a failure here is the harness's or the backend's memory
 * functions', never a conformance verdict. */
#define HARNESS_OK(b, expr)                                                                  \
    do {                                                                                     \
        pagoda_status_t harness_status_ = (expr);                                            \
        if (harness_status_ != PAGODA_OK)                                                    \
            fail_msg("%s: %s returned %s: %s", (b)->label, #expr,                            \
                     pagoda_status_string(harness_status_), (b)->last_error());              \
    } while (0)

static void record_failure(conf_result_t *out, const conf_backend_t *b, pagoda_status_t s,
                           const char *where) {
    out->status = s;
    snprintf(out->message, sizeof out->message, "%s: %s", where, b->last_error());
}

void conf_run(const conf_backend_t *b, const conf_case_t *c, conf_result_t *out) {
    const pagoda_backend_iface_t *f = b->iface;
    memset(out, 0, sizeof *out);
    out->status = PAGODA_OK;
    void *memory[CONF_MAX_TENSORS] = {0};
    int pinned_by_backend[CONF_MAX_TENSORS] = {0};

    pagoda_backend_stream_t *stream = NULL;
    HARNESS_OK(b, f->stream_create(f->self, b->device, &stream));
    for (int t = 0; t < c->n_tensors; ++t) {
        const conf_tensor_t *ten = &c->tensors[t];
        const size_t bytes = ten->bytes ? ten->bytes : 1; /* every tensor gets an address */
        if (ten->place == CONF_DEVICE) {
            HARNESS_OK(b, f->buffer_alloc(f->self, b->device, bytes, &memory[t]));
            if (ten->bytes > 0)
                HARNESS_OK(b, f->copy(f->self, stream, memory[t], ten->init, ten->bytes,
                                      PAGODA_COPY_HOST_TO_DEVICE));
        } else {
            if (f->host_buffer_alloc != NULL) {
                HARNESS_OK(b, f->host_buffer_alloc(f->self, bytes, &memory[t]));
                pinned_by_backend[t] = 1;
            } else {
                memory[t] = test_xmalloc(bytes);
            }
            if (ten->bytes > 0) memcpy(memory[t], ten->init, ten->bytes);
        }
    }
    /* Pointer tables hold this backend's addresses; the copies read `entries` until the sync. */
    void *entries[CONF_MAX_BINDINGS];
    for (int i = 0; i < c->n_bindings; ++i) {
        const conf_binding_t *bind = &c->bindings[i];
        if (bind->kind != CONF_BIND_TABLE_ENTRY) continue;
        entries[i] = (char *)memory[bind->tensor] + bind->byte_offset;
        HARNESS_OK(b, f->copy(f->self, stream,
                              (char *)memory[bind->table] + bind->offset_or_index * sizeof(void *),
                              &entries[i], sizeof(void *), PAGODA_COPY_HOST_TO_DEVICE));
    }
    HARNESS_OK(b, f->stream_synchronize(f->self, stream));

    for (int s = 0; s < c->n_steps && out->status == PAGODA_OK; ++s) {
        conf_args_t args = c->steps[s].args;
        void *src_caches[CONF_MAX_CACHES] = {0}, *dst_caches[CONF_MAX_CACHES] = {0};
        /* This backend's copy of each nested struct of the step, its pointers bound below. */
        void *nested[CONF_MAX_NESTED] = {0};
        for (int n = 0; n < c->n_nested; ++n) {
            const conf_nested_t *nest = &c->nested[n];
            if (nest->step != s) continue;
            nested[n] = test_xmalloc(nest->bytes);
            memcpy(nested[n], nest->host, nest->bytes);
            memcpy((char *)&args + nest->offset, &nested[n], sizeof nested[n]);
        }
        for (int i = 0; i < c->n_bindings; ++i) {
            const conf_binding_t *bind = &c->bindings[i];
            if (bind->step != s) continue;
            void *address = (char *)memory[bind->tensor] + bind->byte_offset;
            switch (bind->kind) {
                case CONF_BIND_FIELD:
                    memcpy((char *)&args + bind->offset_or_index, &address, sizeof address);
                    break;
                case CONF_BIND_SRC_CACHE:
                    src_caches[bind->offset_or_index] = address;
                    args.copy.src_caches = src_caches;
                    break;
                case CONF_BIND_DST_CACHE:
                    dst_caches[bind->offset_or_index] = address;
                    args.copy.dst_caches = dst_caches;
                    break;
                case CONF_BIND_NESTED_FIELD:
                    memcpy((char *)nested[bind->nested] + bind->offset_or_index, &address,
                           sizeof address);
                    break;
                case CONF_BIND_TABLE_ENTRY: break; /* step -1: never here */
            }
        }
        pagoda_status_t st = f->kernels->launch(f->self, stream, c->steps[s].op, &args);
        /* ops.h lets a backend read a nested struct only during the launch: the copy is spoiled
         * and freed as soon as it returns, so one that reads it later from the stream fails. */
        for (int n = 0; n < c->n_nested; ++n) {
            if (nested[n] == NULL) continue;
            memset(nested[n], 0xFF, c->nested[n].bytes);
            free(nested[n]);
        }
        if (st != PAGODA_OK) {
            char where[64];
            snprintf(where, sizeof where, "launch of step %d (%s)", s, pagoda_op_name(c->steps[s].op));
            record_failure(out, b, st, where);
        }
    }
    /* Errors found on a device surface here; after a failed launch this only drains. */
    pagoda_status_t st = f->stream_synchronize(f->self, stream);
    if (st != PAGODA_OK && out->status == PAGODA_OK) record_failure(out, b, st, "stream_synchronize");

    if (out->status == PAGODA_OK) {
        for (int t = 0; t < c->n_tensors; ++t) {
            const conf_tensor_t *ten = &c->tensors[t];
            if (ten->compare == CONF_INPUT) continue;
            out->outputs[t] = test_xmalloc(ten->bytes);
            if (ten->bytes == 0) continue;
            if (ten->place == CONF_DEVICE)
                HARNESS_OK(b, f->copy(f->self, stream, out->outputs[t], memory[t], ten->bytes,
                                      PAGODA_COPY_DEVICE_TO_HOST));
        }
        HARNESS_OK(b, f->stream_synchronize(f->self, stream));
        for (int t = 0; t < c->n_tensors; ++t)
            if (c->tensors[t].compare != CONF_INPUT && c->tensors[t].place == CONF_HOST_PINNED)
                memcpy(out->outputs[t], memory[t], c->tensors[t].bytes);
    }

    for (int t = 0; t < c->n_tensors; ++t) {
        if (c->tensors[t].place == CONF_DEVICE)
            f->buffer_free(f->self, b->device, memory[t]);
        else if (pinned_by_backend[t])
            f->host_buffer_free(f->self, memory[t]);
        else
            free(memory[t]);
    }
    f->stream_destroy(f->self, stream);
}

void conf_result_free(conf_result_t *r) {
    for (int t = 0; t < CONF_MAX_TENSORS; ++t) free(r->outputs[t]);
    memset(r->outputs, 0, sizeof r->outputs);
}

static int perturb_mode(void) {
    const char *v = getenv("PAGODA_CONFORMANCE_PERTURB");
    return v != NULL && strcmp(v, "1") == 0;
}

enum { PRINTED_FAILURES = 25 };

static int g_print_mismatches = 1, g_unsupported_is_skip = 0;

void conf_set_reporting(int print_mismatches, int unsupported_is_skip) {
    g_print_mismatches = print_mismatches;
    g_unsupported_is_skip = unsupported_is_skip;
}

static void report(conf_tally_t *tally, const char *fmt, ...) {
    tally->failures++;
    va_list ap;
    if (tally->failures == 1) {
        /* Kept for a summary line: which case (counted from 1 in this tally), and why. */
        const int n = snprintf(tally->first_failure, sizeof tally->first_failure, "case %d: ",
                               tally->cases);
        va_start(ap, fmt);
        vsnprintf(tally->first_failure + n, sizeof tally->first_failure - (size_t)n, fmt, ap);
        va_end(ap);
    }
    if (!g_print_mismatches || tally->failures > PRINTED_FAILURES) return;
    va_start(ap, fmt);
    fprintf(stderr, "MISMATCH: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* A case a backend under test may refuse and did: counted and kept, never silently passed. */
static void record_skip(conf_tally_t *tally, const char *label, const conf_backend_t *b, const char *why) {
    if (tally->skipped++ == 0)
        snprintf(tally->first_skip, sizeof tally->first_skip, "case %d (%s): %s", tally->cases,
                 label, why);
    if (g_print_mismatches) fprintf(stderr, "skipping %s for %s: %s\n", label, b->label, why);
}

/* Whether `b`'s supports agrees with the reference's on every step; reports when it does not. */
static int supports_agree(const conf_backend_t *b, const conf_case_t *c, conf_tally_t *tally) {
    const conf_backend_t *ref = conf_reference();
    for (int s = 0; s < c->n_steps; ++s) {
        const conf_step_t *step = &c->steps[s];
        pagoda_status_t want =
            ref->iface->kernels->supports(ref->iface->self, ref->device, step->op, &step->args);
        char want_msg[256];
        snprintf(want_msg, sizeof want_msg, "%s", want == PAGODA_OK ? "" : ref->last_error());
        pagoda_status_t got =
            b->iface->kernels->supports(b->iface->self, b->device, step->op, &step->args);
        if ((c->may_refuse || g_unsupported_is_skip) && want == PAGODA_OK &&
            got == PAGODA_ERR_UNSUPPORTED) {
            record_skip(tally, c->label, b, b->last_error());
            return 0;
        }
        if (got != want) {
            report(tally, "%s: %s: supports(%s) = %s (%s), the reference says %s%s%s", b->label,
                   c->label, pagoda_op_name(step->op), pagoda_status_string(got),
                   got == PAGODA_OK ? "" : b->last_error(), pagoda_status_string(want),
                   want == PAGODA_OK ? "" : ": ", want_msg);
            return 0;
        }
    }
    return 1;
}

void conf_check_case(conf_case_t *c, conf_tally_t *tally) {
    size_t n_under = 0;
    const conf_backend_t *const *under = conf_backends_under_test(&n_under);
    const int perturbing = perturb_mode();
    tally->cases++;

    conf_result_t ref;
    conf_run(conf_reference(), c, &ref);
    if (ref.status != c->expect) {
        report(tally, "%s: the reference returned %s (%s) where the case expects %s", c->label,
               pagoda_status_string(ref.status), ref.message, pagoda_status_string(c->expect));
        conf_result_free(&ref);
        conf_case_free(c);
        return;
    }
    for (size_t i = 0; i < n_under; ++i) {
        const conf_backend_t *b = under[i];
        if (!supports_agree(b, c, tally)) continue;
        conf_result_t got;
        conf_run(b, c, &got);
        if (got.status != ref.status) {
            report(tally, "%s: %s: status %s (%s), the reference's %s (%s)", b->label, c->label,
                   pagoda_status_string(got.status), got.message, pagoda_status_string(ref.status),
                   ref.message);
        } else if (ref.status == PAGODA_OK) {
            for (int t = 0; t < c->n_tensors; ++t) {
                const conf_tensor_t *ten = &c->tensors[t];
                if (ten->compare == CONF_INPUT) continue;
                char why[512];
                const float *scores = NULL;
                if (ten->compare == CONF_ARGMAX)
                    scores = c->tensors[ten->tie_tensor].compare == CONF_INPUT
                                 ? (const float *)c->tensors[ten->tie_tensor].init
                                 : (const float *)ref.outputs[ten->tie_tensor];
                if (perturbing) {
                    if (!conf_perturb(ten, ref.outputs[t], got.outputs[t], scores)) continue;
                    if (conf_compare_tensor(ten, ref.outputs[t], got.outputs[t], scores, why,
                                            sizeof why))
                        report(tally, "%s: %s: a perturbed %s passed the comparison", b->label,
                               c->label, ten->name);
                    else
                        tally->compared++;
                } else if (!conf_compare_tensor(ten, ref.outputs[t], got.outputs[t], scores, why,
                                                sizeof why)) {
                    report(tally, "%s: %s: %s", b->label, c->label, why);
                } else {
                    tally->compared++;
                }
            }
        }
        conf_result_free(&got);
    }
    conf_result_free(&ref);
    conf_case_free(c);
}

void conf_check_supports(const char *label, pagoda_op_t op, const void *args, int expect_valid,
                         conf_tally_t *tally) {
    size_t n_under = 0;
    const conf_backend_t *const *under = conf_backends_under_test(&n_under);
    const conf_backend_t *ref = conf_reference();
    tally->cases++;
    pagoda_clear_error();
    const pagoda_status_t want = ref->iface->kernels->supports(ref->iface->self, ref->device, op, args);
    char want_msg[256];
    snprintf(want_msg, sizeof want_msg, "%s", want == PAGODA_OK ? "accepted" : ref->last_error());
    if (expect_valid >= 0 && (want == PAGODA_OK) != (expect_valid != 0)) {
        report(tally, "%s: %s: the reference %s it (%s), the list says it is %s",
               pagoda_op_name(op), label, want == PAGODA_OK ? "accepts" : "rejects", want_msg,
               expect_valid ? "valid" : "invalid");
        return;
    }
    for (size_t i = 0; i < n_under; ++i) {
        const conf_backend_t *b = under[i];
        const pagoda_status_t got = b->iface->kernels->supports(b->iface->self, b->device, op, args);
        if (g_unsupported_is_skip && want == PAGODA_OK && got == PAGODA_ERR_UNSUPPORTED)
            record_skip(tally, label, b, b->last_error());
        else if (got != want)
            report(tally, "%s: %s: %s: supports = %s (%s), the reference's %s (%s)", b->label,
                   pagoda_op_name(op), label, pagoda_status_string(got),
                   got == PAGODA_OK ? "accepted" : b->last_error(), pagoda_status_string(want),
                   want_msg);
        else
            tally->compared++;
    }
}

void conf_finish(const char *what, const conf_tally_t *tally) {
    size_t n_under = 0;
    conf_backends_under_test(&n_under);
    fprintf(stderr, "%s: %d cases on %zu backend(s) under test, %d comparisons passed, %d failed%s\n",
            what, tally->cases, n_under, tally->compared, tally->failures,
            perturb_mode() ? " (perturbed outputs: a pass means the perturbation was caught)" : "");
    if (tally->failures > 0)
        fail_msg("%s: %d mismatches with the reference (the first %d are printed above)", what,
                 tally->failures, PRINTED_FAILURES);
    if (tally->compared == 0) fail_msg("%s: nothing was compared", what);
}
