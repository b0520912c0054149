/**
 * \file plugin.h
 * \brief The plugin ABI: what a backend plugin implements and the host calls, through which
 *        kernels and collectives arrive (backend.h loads and lists plugins).
 *
 * A backend is a shared object `libpagoda-backend-<name>.so` that exports one symbol,
 * ::PAGODA_BACKEND_ENTRY_SYMBOL, of type ::pagoda_backend_entry_fn. It never links libpagoda:
 * what it needs from the host (logging, error text, host memory) arrives as a
 * ::pagoda_backend_host_t table.
 *
 * Negotiation: the host calls the entry with its ::PAGODA_BACKEND_ABI_VERSION. A plugin whose
 * major version differs returns ::PAGODA_ERR_ABI_MISMATCH; otherwise it returns its interface
 * table, whose `abi_version` the host checks again. Minor versions only append table slots and
 * struct fields, which each side detects through `struct_size`.
 */
#ifndef PAGODA_PLUGIN_H
#define PAGODA_PLUGIN_H

#include "pagoda/log.h"
#include "pagoda/ops.h"
#include "pagoda/status.h"

/**
 * \defgroup plugin Plugin ABI
 * \brief The tables a backend plugin fills and the entry point the host calls.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief Plugin ABI version: major in the upper 16 bits, minor in the lower 16.
 *
 * - 1.1: graph capture slots; activation types (`act_dtype` and kin) in the ops; KV_WRITE's
 *   `k_rope`; ::PAGODA_OP_SAMPLE.
 * - 1.2: cache parallelism: ::pagoda_op_paged_attention_t's `kv_shards`, `kv_shard` and `lse`,
 *   and ::PAGODA_OP_ATTENTION_MERGE. A host finds the fields through `struct_size` as usual; a
 *   backend of an older minor version refuses a descriptor that sets them, and an op it does not
 *   know, with ::PAGODA_ERR_UNSUPPORTED, so plugins of 1.0 and 1.1 still load.
 * - 1.3: quantized block weights (dtype.h's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) as MATMUL's `w_dtype`
 *   and EMBEDDING's `table_dtype`. An older backend refuses the unknown type values, so the host
 *   widens such weights for it.
 * - 1.4: ::PAGODA_MATMUL_QUANTIZE_X, leave to compute a product on block weights from 8-bit
 *   activations. An older backend refuses the unknown flag, so the host asks without it.
 * - 1.5: ::PAGODA_MATMUL_ROUND_W, leave to round decoded block weights to the activations' half
 *   type. Refused by older backends likewise.
 * - 1.6: kernel variants: ::pagoda_backend_kernels_t::variant_name and
 *   ::pagoda_op_matmul_t::variant, so the host can time a backend's kernels for an op and pin
 *   one. An older backend refuses a nonzero `variant` (a field past its struct).
 * - 1.7: communicators across processes: ::pagoda_backend_collectives_t's `get_unique_id_ex`
 *   and `comm_create_ex`, with a ::pagoda_comm_options_t naming where the ranks live and how
 *   long a rank waits for the others. The host asks an older backend only for communicators
 *   inside one process.
 * - 1.8: the layers of newer architectures: ::pagoda_op_silu_mul_t's `activation` (GELU with
 *   the tanh approximation, Gemma), ::pagoda_op_paged_attention_t's `softcap` (Gemma 2),
 *   ::pagoda_op_embedding_t's `scale` (Gemma), ::PAGODA_OP_SOFTCAP (Gemma 2's logits), and
 *   mixture-of-experts layers: ::PAGODA_OP_MOE_ROUTE and ::PAGODA_OP_MOE_MATMUL. An
 *   older backend refuses a descriptor that sets a field past its struct, and the new ops, with
 *   ::PAGODA_ERR_UNSUPPORTED; models that need none of them still run on it.
 * - 1.9: ::PAGODA_MATMUL_QUANTIZE_X_BLOCK, leave to round activations per W block (256 values
 *   for the K types) instead of per 32. An older backend refuses the unknown flag, so the host
 *   asks without it.
 */
#define PAGODA_BACKEND_ABI_VERSION ((1u << 16) | 9u)
/** \brief The major part of a plugin ABI version. */
#define PAGODA_BACKEND_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
/** \brief The one symbol a backend exports. */
#define PAGODA_BACKEND_ENTRY_SYMBOL "pagoda_backend_entry"

/* ------------------------------------------------------------------------------------------ */
/* Host services                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* pagoda_log_level_t, the severity of a host log line, is defined in log.h. */

/**
 * \brief What the host offers a plugin. Passed to the entry; valid until the plugin's `destroy`.
 *
 * All functions are safe from any thread.
 */
typedef struct pagoda_backend_host {
    uint32_t struct_size; /**< sizeof(pagoda_backend_host_t) as the host knows it. */
    uint32_t abi_version; /**< The host's ::PAGODA_BACKEND_ABI_VERSION. */
    void *ctx;            /**< Passed back as the first argument of every service. */
    /** Writes a log line on the host's log. */
    void (*log)(void *ctx, pagoda_log_level_t level, const char *message);
    /**
     * Sets the calling thread's error message; the plugin calls it before returning a failure
     * status, naming what failed ("cudaMalloc of 2 GiB on cuda:1: out of memory").
     */
    void (*set_error)(void *ctx, const char *message);
    /** Allocates host memory aligned to `alignment` (a power of two); NULL on failure. */
    void *(*host_alloc)(void *ctx, size_t size, size_t alignment);
    /** Frees what `host_alloc` returned; NULL is ignored. */
    void (*host_free)(void *ctx, void *ptr);
} pagoda_backend_host_t;

/* ------------------------------------------------------------------------------------------ */
/* Devices, streams, events                                                                    */
/* ------------------------------------------------------------------------------------------ */

/** \brief What kind of processor a device is. */
typedef enum pagoda_device_kind {
    PAGODA_DEVICE_CPU = 0, /**< Host processor cores. */
    PAGODA_DEVICE_GPU = 1  /**< A discrete or integrated GPU. */
} pagoda_device_kind_t;

/** \brief ::pagoda_device_info_t::flags: the host can read and write device memory directly. */
#define PAGODA_DEVICE_HOST_ACCESSIBLE 1u
/** \brief ::pagoda_device_info_t::flags: the backend can launch kernels on weights in mmapped host memory. */
#define PAGODA_DEVICE_USES_HOST_WEIGHTS 2u

/** \brief A device's description; filled by the backend. */
typedef struct pagoda_device_info {
    uint32_t struct_size;        /**< Set by the caller to sizeof(pagoda_device_info_t). */
    int32_t kind;                /**< A ::pagoda_device_kind_t: CPU or GPU. */
    uint32_t flags;              /**< PAGODA_DEVICE_* bits. */
    int32_t compute_units;       /**< Threads the backend uses (CPU) or multiprocessors (GPU). */
    uint64_t total_memory;       /**< Bytes of memory the device has. */
    uint64_t free_memory;        /**< Bytes free now, as far as the backend can tell. */
    char name[128];              /**< Model name, NUL-terminated ("AMD EPYC 7B13", "NVIDIA H100"). */
    char arch[32];               /**< Architecture tag, NUL-terminated ("x86_64-avx2", "sm_90"). */
} pagoda_device_info_t;

/** \brief ::pagoda_backend_iface_t::event_create flags: the event records a time, for event_elapsed. */
#define PAGODA_EVENT_TIMING 1u

/** \brief An ordered queue of work on one device; defined by each backend. */
typedef struct pagoda_backend_stream pagoda_backend_stream_t;
/** \brief A marker in a stream that other streams or the host can wait for; defined by each backend. */
typedef struct pagoda_backend_event pagoda_backend_event_t;
/** \brief A collective communicator for one rank; defined by each backend. */
typedef struct pagoda_backend_comm pagoda_backend_comm_t;
/** \brief Work recorded from a stream once and launched many times; defined by each backend. */
typedef struct pagoda_backend_graph pagoda_backend_graph_t;

/** \brief Which memories a ::pagoda_backend_iface_t::copy joins. */
typedef enum pagoda_copy_kind {
    PAGODA_COPY_HOST_TO_DEVICE = 0,   /**< Host memory to the stream's device. */
    PAGODA_COPY_DEVICE_TO_HOST = 1,   /**< The stream's device to host memory. */
    PAGODA_COPY_DEVICE_TO_DEVICE = 2, /**< Within the stream's device, or peer to peer. */
    PAGODA_COPY_HOST_TO_HOST = 3      /**< Host to host, ordered with the stream's work. */
} pagoda_copy_kind_t;

/* ------------------------------------------------------------------------------------------ */
/* Kernel table                                                                                */
/* ------------------------------------------------------------------------------------------ */

/**
 * \brief The ops a backend can run.
 *
 * `args` points to the op's argument struct from ops.h (a ::pagoda_op_matmul_t for
 * ::PAGODA_OP_MATMUL, and so on).
 */
typedef struct pagoda_backend_kernels {
    uint32_t struct_size; /**< sizeof(pagoda_backend_kernels_t) as the plugin knows it. */
    /**
     * Whether `device` can run `op` as `args` describes it. Only types, shapes, layout and flags
     * are read; pointers may be NULL. Returns ::PAGODA_OK, ::PAGODA_ERR_UNSUPPORTED (with a
     * message saying which field is unsupported), or ::PAGODA_ERR_INVALID_ARGUMENT for a
     * descriptor that is wrong for any backend.
     */
    pagoda_status_t (*supports)(void *self, int32_t device, pagoda_op_t op, const void *args);
    /**
     * Runs `op` on `stream` (asynchronously where the backend is). Arguments are checked as
     * `supports` checks them, and indices (token ids, block ids, slots) are checked where the
     * backend can do so without a synchronisation; a bad one fails with a message naming it.
     */
    pagoda_status_t (*launch)(void *self, pagoda_backend_stream_t *stream, pagoda_op_t op,
                              const void *args);
    /* Since ABI 1.6. A table of an older plugin ends here (its struct_size says so). */
    /**
     * The name of `device`'s `variant`-th kernel for `op` (1-based, as an op's `variant` field
     * asks for it), or NULL past the last one and for ops without variants. Names are short,
     * static and stable across versions of the plugin ("gemv", "sgemm"), so a host may store a
     * choice by name. NULL slot: the backend offers no variants.
     */
    const char *(*variant_name)(void *self, int32_t device, pagoda_op_t op, int32_t variant);
} pagoda_backend_kernels_t;

/* ------------------------------------------------------------------------------------------ */
/* Collectives table                                                                           */
/* ------------------------------------------------------------------------------------------ */

/** \brief Bytes of a communicator's unique id, which rank 0 makes and every rank receives. */
#define PAGODA_COMM_UNIQUE_ID_BYTES 128

/** \brief Opaque bootstrap token that joins ranks into one communicator. */
typedef struct pagoda_comm_unique_id {
    unsigned char bytes[PAGODA_COMM_UNIQUE_ID_BYTES]; /**< Backend-defined contents. */
} pagoda_comm_unique_id_t;

/** \brief Where the ranks of a communicator live. */
typedef enum pagoda_comm_scope {
    PAGODA_COMM_SCOPE_PROCESS = 0, /**< Every rank in the process that made the id. */
    PAGODA_COMM_SCOPE_HOST = 1,    /**< Ranks in several processes of one machine. */
    PAGODA_COMM_SCOPE_NETWORK = 2  /**< Ranks on several machines. */
} pagoda_comm_scope_t;

/** \brief How to make a communicator (`get_unique_id_ex`, `comm_create_ex`). */
typedef struct pagoda_comm_options {
    uint32_t struct_size;      /**< sizeof(pagoda_comm_options_t) as the caller knows it. */
    pagoda_comm_scope_t scope; /**< Where its ranks live; the id is made for that scope. */
    /**
     * How long a rank waits for the others (to join, in a collective, for a message) before it
     * fails and aborts the communicator, so that a rank that died or hangs fails its peers in
     * bounded time; 0 = the backend's default. Every rank passes the same value.
     */
    int64_t timeout_ms;
} pagoda_comm_options_t;

/** \brief Reduction of a collective. */
typedef enum pagoda_reduce_op {
    PAGODA_REDUCE_SUM = 0, /**< Sum. */
    PAGODA_REDUCE_MAX = 1, /**< Maximum. */
    PAGODA_REDUCE_MIN = 2  /**< Minimum. */
} pagoda_reduce_op_t;

/**
 * \brief Collectives among the ranks of a communicator, ordered on streams.
 *
 * Counts are elements of `dtype` per rank. Calls between `group_start` and `group_end` are
 * fused and may only complete together (needed for send/recv pairs).
 *
 * A failed or hung rank must not hang the others forever: the host watches with
 * `comm_get_async_error` and the stream and event queries, and calls `comm_abort` on every
 * rank's communicator when one fails; collectives waiting on an aborted communicator fail.
 */
typedef struct pagoda_backend_collectives {
    uint32_t struct_size; /**< sizeof(pagoda_backend_collectives_t) as the plugin knows it. */
    /** Makes a new unique id; done by one rank and shared with the others out of band. */
    pagoda_status_t (*get_unique_id)(void *self, pagoda_comm_unique_id_t *id);
    /**
     * Joins rank `rank` of `n_ranks` on `device`; blocks until all ranks joined. A thread that
     * creates several ranks (one per local device) wraps the calls in `group_start` and
     * `group_end`; backends whose ranks are host threads (the CPU backend) need one thread per
     * rank.
     */
    pagoda_status_t (*comm_create)(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                                   int32_t n_ranks, int32_t rank, pagoda_backend_comm_t **out);
    /** Destroys a communicator; NULL is ignored. */
    void (*comm_destroy)(void *self, pagoda_backend_comm_t *comm);
    /**
     * Aborts a communicator so that every rank's pending collective fails instead of hanging.
     * The communicator must still be released with `comm_destroy`.
     */
    pagoda_status_t (*comm_abort)(void *self, pagoda_backend_comm_t *comm);
    /** `recv = reduce over ranks of send`, `count` elements; in place when `send == recv`. */
    pagoda_status_t (*all_reduce)(void *self, pagoda_backend_comm_t *comm,
                                  pagoda_backend_stream_t *stream, const void *send, void *recv,
                                  size_t count, pagoda_dtype_t dtype, pagoda_reduce_op_t op);
    /** `recv[r·count ..] = send of rank r`. */
    pagoda_status_t (*all_gather)(void *self, pagoda_backend_comm_t *comm,
                                  pagoda_backend_stream_t *stream, const void *send, void *recv,
                                  size_t count, pagoda_dtype_t dtype);
    /** `recv = (reduce over ranks of send)[rank·count ..]`, `send` holding `n_ranks·count`. */
    pagoda_status_t (*reduce_scatter)(void *self, pagoda_backend_comm_t *comm,
                                      pagoda_backend_stream_t *stream, const void *send,
                                      void *recv, size_t count, pagoda_dtype_t dtype,
                                      pagoda_reduce_op_t op);
    /** `recv = send of rank root` on every rank. */
    pagoda_status_t (*broadcast)(void *self, pagoda_backend_comm_t *comm,
                                 pagoda_backend_stream_t *stream, const void *send, void *recv,
                                 size_t count, pagoda_dtype_t dtype, int32_t root);
    /** Sends `count` elements to rank `peer`. */
    pagoda_status_t (*send)(void *self, pagoda_backend_comm_t *comm,
                            pagoda_backend_stream_t *stream, const void *buf, size_t count,
                            pagoda_dtype_t dtype, int32_t peer);
    /** Receives `count` elements from rank `peer`. */
    pagoda_status_t (*recv)(void *self, pagoda_backend_comm_t *comm,
                            pagoda_backend_stream_t *stream, void *buf, size_t count,
                            pagoda_dtype_t dtype, int32_t peer);
    /** Opens a group of collectives issued by this thread. */
    pagoda_status_t (*group_start)(void *self);
    /** Closes the group opened by `group_start` and issues it. */
    pagoda_status_t (*group_end)(void *self);
    /**
     * Sets `*error` to ::PAGODA_OK while the communicator is healthy, or to the status of an
     * asynchronous failure (a failed collective, a peer's abort), without blocking.
     */
    pagoda_status_t (*comm_get_async_error)(void *self, pagoda_backend_comm_t *comm,
                                            pagoda_status_t *error);
    /* Since ABI 1.7. A table of an older plugin ends here (its struct_size says so). */
    /**
     * Makes a new unique id for a communicator whose ranks live as `options->scope` says;
     * ::PAGODA_ERR_UNSUPPORTED for a scope the backend cannot span. `get_unique_id` is this
     * with ::PAGODA_COMM_SCOPE_PROCESS.
     */
    pagoda_status_t (*get_unique_id_ex)(void *self, const pagoda_comm_options_t *options,
                                        pagoda_comm_unique_id_t *id);
    /**
     * `comm_create` for an id of `get_unique_id_ex`, with the same `options` on every rank.
     * A rank that dies, or waits past `timeout_ms`, makes the others' calls fail with
     * ::PAGODA_ERR_BACKEND naming it, and aborts the communicator.
     */
    pagoda_status_t (*comm_create_ex)(void *self, int32_t device, const pagoda_comm_unique_id_t *id,
                                      int32_t n_ranks, int32_t rank,
                                      const pagoda_comm_options_t *options,
                                      pagoda_backend_comm_t **out);
} pagoda_backend_collectives_t;

/* ------------------------------------------------------------------------------------------ */
/* The interface table                                                                         */
/* ------------------------------------------------------------------------------------------ */

/**
 * \brief Everything a backend offers. Returned by its entry; valid until `destroy`.
 *
 * Every function takes the table's `self` first. Unless a slot says otherwise, functions are
 * safe from any thread, but a stream is used from one thread at a time. Every failing call sets
 * an error through the host's `set_error` and returns a status. A call that names a device may
 * make it the calling thread's current device (as CUDA does).
 */
typedef struct pagoda_backend_iface {
    uint32_t struct_size; /**< sizeof(pagoda_backend_iface_t) as the plugin knows it. */
    uint32_t abi_version; /**< The plugin's ::PAGODA_BACKEND_ABI_VERSION. */
    const char *name;     /**< Short name, `[a-z0-9_]+`, such as `"cpu"` or `"cuda"`. */
    const char *description; /**< One line for humans: library versions, build options. */
    void *self;           /**< The plugin's state; passed back as every function's first argument. */

    /** Releases the plugin's state; the table is invalid afterwards. */
    void (*destroy)(void *self);

    /** Number of devices. */
    pagoda_status_t (*device_count)(void *self, int32_t *count);
    /** Describes device `device`; the caller sets `info->struct_size`. */
    pagoda_status_t (*device_info)(void *self, int32_t device, pagoda_device_info_t *info);

    /** Allocates `size` bytes of device memory, aligned to at least 256 bytes. */
    pagoda_status_t (*buffer_alloc)(void *self, int32_t device, size_t size, void **out);
    /** Frees device memory from `buffer_alloc`; NULL is ignored. */
    void (*buffer_free)(void *self, int32_t device, void *ptr);
    /**
     * Allocates host memory suited to fast transfers with the backend's devices (pinned).
     * May be NULL: the host then uses its own allocator.
     */
    pagoda_status_t (*host_buffer_alloc)(void *self, size_t size, void **out);
    /** Frees what `host_buffer_alloc` returned; NULL if that slot is NULL. */
    void (*host_buffer_free)(void *self, void *ptr);

    /** Creates a stream on `device`. */
    pagoda_status_t (*stream_create)(void *self, int32_t device, pagoda_backend_stream_t **out);
    /** Destroys a stream after its work is done; NULL is ignored. */
    void (*stream_destroy)(void *self, pagoda_backend_stream_t *stream);
    /** Blocks until the stream's work is done; reports a failure of that work. */
    pagoda_status_t (*stream_synchronize)(void *self, pagoda_backend_stream_t *stream);

    /**
     * Creates an event on `device`. `flags` holds PAGODA_EVENT_* bits (unknown bits are an
     * error); events without ::PAGODA_EVENT_TIMING are cheaper where the backend distinguishes.
     */
    pagoda_status_t (*event_create)(void *self, int32_t device, uint32_t flags,
                                    pagoda_backend_event_t **out);
    /** Destroys an event; NULL is ignored. */
    void (*event_destroy)(void *self, pagoda_backend_event_t *event);
    /** Marks the point in `stream` that `event` stands for. */
    pagoda_status_t (*event_record)(void *self, pagoda_backend_event_t *event,
                                    pagoda_backend_stream_t *stream);
    /** Makes `stream` wait for `event` before later work, without blocking the host. */
    pagoda_status_t (*stream_wait_event)(void *self, pagoda_backend_stream_t *stream,
                                         pagoda_backend_event_t *event);
    /** Blocks the host until `event` has completed. */
    pagoda_status_t (*event_synchronize)(void *self, pagoda_backend_event_t *event);

    /**
     * Copies `size` bytes on `stream`; host memory must stay valid until the stream reaches it.
     * A copy between a device and pageable host memory may block the calling thread; host
     * memory from `host_buffer_alloc` lets it overlap with other work.
     */
    pagoda_status_t (*copy)(void *self, pagoda_backend_stream_t *stream, void *dst,
                            const void *src, size_t size, pagoda_copy_kind_t kind);
    /** Sets `size` bytes of device memory to `value` on `stream`. */
    pagoda_status_t (*memset)(void *self, pagoda_backend_stream_t *stream, void *dst, int value,
                              size_t size);

    /** The kernel table; never NULL. */
    const pagoda_backend_kernels_t *kernels;
    /** The collectives table; NULL for a backend without collectives. */
    const pagoda_backend_collectives_t *collectives;

    /**
     * Without blocking, sets `*complete` to 1 when all work queued on `stream` is done and to 0
     * otherwise; reports a failure of that work. Lets the host watch for hangs.
     */
    pagoda_status_t (*stream_query)(void *self, pagoda_backend_stream_t *stream,
                                    uint32_t *complete);
    /** Without blocking, sets `*complete` to 1 when `event` has completed, 0 otherwise. */
    pagoda_status_t (*event_query)(void *self, pagoda_backend_event_t *event, uint32_t *complete);
    /**
     * Milliseconds between two completed events, both created with ::PAGODA_EVENT_TIMING and
     * recorded; the cost model's measurements rest on it.
     */
    pagoda_status_t (*event_elapsed)(void *self, pagoda_backend_event_t *start,
                                     pagoda_backend_event_t *end, float *milliseconds);

    /* Since ABI 1.1. A table of ABI 1.0 ends here; the host reads the slots below as NULL. */

    /**
     * Starts recording the work issued to `stream` into a graph instead of running it (CUDA's
     * stream capture), so that a decode step's hundreds of launches cost one later. While the
     * stream records, only `launch`, `memset` and device-to-device `copy` may be issued to it,
     * from the thread that began the recording; launches check their descriptors as usual and
     * read host memory (descriptors, nested structs) now, and the device memory they name when
     * the graph runs. Anything else fails and spoils the recording, which `graph_capture_end`
     * then reports. NULL when the backend has no graphs: the host launches op by op.
     */
    pagoda_status_t (*graph_capture_begin)(void *self, pagoda_backend_stream_t *stream);
    /**
     * Ends the recording begun on `stream` and, unless it was spoilt, returns it in `*out`. On
     * failure the recording is dropped, `*out` is NULL and the stream runs work again.
     */
    pagoda_status_t (*graph_capture_end)(void *self, pagoda_backend_stream_t *stream,
                                         pagoda_backend_graph_t **out);
    /**
     * Runs `graph` on `stream`, which must be the stream it was recorded on: the same device
     * addresses and launch parameters, with whatever device memory holds when it runs. Failures
     * inside the graph are reported by the stream's synchronize or query, as for launches.
     */
    pagoda_status_t (*graph_launch)(void *self, pagoda_backend_graph_t *graph,
                                    pagoda_backend_stream_t *stream);
    /** Destroys a graph; NULL is ignored. Work already launched from it completes. */
    void (*graph_destroy)(void *self, pagoda_backend_graph_t *graph);
} pagoda_backend_iface_t;

/**
 * \brief The type of ::PAGODA_BACKEND_ENTRY_SYMBOL.
 * \param[in] host the host's services and ABI version; valid until `destroy`.
 * \param[in] config `key=value` pairs separated by commas, or NULL; unknown keys are an error
 *            naming the key. The CPU backend reads `devices=N` (1..64 logical devices
 *            `cpu:0`..`cpu:N-1`, default 1), `threads=T` (the total over all devices, split
 *            evenly, each device at least 1; default `PAGODA_NUM_THREADS`, else every core),
 *            `device_threads=a/b/c` (one thread count per device, instead of `threads`; it sets
 *            the device count unless `devices` is given, which it must then match),
 *            `memory=BYTES` (each device's budget for `buffer_alloc`, an integer with an
 *            optional K, M, G or T suffix for 2^10..2^40; default MemTotal / N),
 *            `isa=native|avx2|portable` (which kernels run: the best the processor has, at
 *            most AVX2, or plain C++), `weights=copy|mapped` (copy: the host copies weights into
 *            the backend's buffers, on huge pages where the kernel gives them, the default;
 *            mapped: kernels read them in place from the model file's mapping, which processes
 *            share and which takes no memory of its own, at slower decode), `network_interface=NAME`
 *            (the interface whose address the collectives between machines use, over Gloo's
 *            TCP transport; default the first interface up that is not loopback) and, for
 *            tests, `fail_collective=D:K` (the K-th collective
 *            call on device D, counting from 1, fails once with ::PAGODA_ERR_BACKEND and leaves
 *            its peers waiting until their communicators are aborted); the
 *            CUDA backend reads `tf32=0|1` (f32 GEMMs may round inputs to TF32; off by
 *            default, since ops promise f32 compute) and `nccl_timeout_ms` (how long NCCL
 *            communicator setup, a collective's enqueue or teardown may wait for the other
 *            ranks before the communicator is aborted; 10 minutes by default).
 * \param[out] out the plugin's interface table on success.
 * \return ::PAGODA_OK, ::PAGODA_ERR_ABI_MISMATCH if the host's major version differs,
 *         ::PAGODA_ERR_NOT_FOUND when the machine has no device of the plugin's kind (no GPU, no
 *         driver: discovery then logs an info line, not a warning), or the status of whatever
 *         else failed (a bad config, a broken driver), with the host's `set_error` called.
 */
typedef pagoda_status_t (*pagoda_backend_entry_fn)(const pagoda_backend_host_t *host,
                                                   const char *config,
                                                   const pagoda_backend_iface_t **out);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_PLUGIN_H */
