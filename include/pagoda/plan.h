/**
 * \file plan.h
 * \brief Plans: where each layer of a model runs on a mesh, and how a long prompt is sliced.
 */
#ifndef PAGODA_PLAN_H
#define PAGODA_PLAN_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup plan Plans
 * \brief The planner cuts a model's decoder layers into pipeline stages, gives each stage a
 *        sub-mesh of an N × M device mesh (N nodes of M devices) and runs the stage
 *        tensor-parallel over it (Alpa's inter-operator pass), keeping every device within its
 *        memory; optionally it also slices a long prompt's prefill across the stages (TeraPipe).
 *        Costs come from an analytic roofline of a device preset, or from layer times measured
 *        on a real backend and stored in a cost file.
 *
 * A plan is data: it can be written as JSON, read back, and inspected through getters.
 *
 * \par Sub-mesh shapes
 * A stage runs on (1, 2^p) devices of one node, with 2^p ≤ M, or on (n, M) whole nodes; any
 * such multiset that adds up to N·M devices tiles the mesh, so M must be a power of two. The
 * first stage also holds the embedding and the last the LM head.
 *
 * \par Objectives
 * ::PAGODA_PLAN_LATENCY minimises the time of one batch through every stage, Σ t_i.
 * ::PAGODA_PLAN_THROUGHPUT minimises the time of B micro-batches, Σ t_i + (B − 1)·max t_i.
 * t_i counts a stage's compute, its tensor-parallel all-reduces and the send to the next stage.
 *
 * \par JSON schema (version 1)
 * \code{.json}
 * {
 *   "format": "pagoda-plan", "version": 1,
 *   "model": {"hidden": 8192, "intermediate": 28672, "layers": 80, "heads": 64,
 *             "kv_heads": 8, "head_dim": 128, "vocab": 128256, "tied_embeddings": false,
 *             "experts": 0, "experts_per_token": 0,   // a mixture of experts: its experts,
 *             "expert_intermediate": 0,               // the columns of each, and the layers
 *             "sparse_layers": 0},                    // that hold them (all 0: dense)
 *   "device": "h100",                  // the device spec the costs used
 *   "cost_source": "analytic",         // or "measured:<cost file path>"
 *   "link_source": "assumed",          // or where measured links priced the communication:
 *                                      //   "measured within_machine within nodes; measured
 *                                      //   across_machines across nodes" (optional on input)
 *   "mesh": {"nodes": 8, "devices_per_node": 8},
 *   "objective": "latency",            // or "throughput"
 *   "micro_batches": 1,                // B
 *   "requested_stages": 0,             // 0 = the planner chose the count
 *   "requested_tensor_parallel": 0,    // 0 = the planner chose per stage
 *   "epsilon_seconds": 0,              // t_max candidates closer than this were skipped
 *   "workload": {"tokens": 2048, "context": 0, "kv_tokens": 0, "logit_rows": 1},
 *   "stages": [                        // in pipeline order; cover layers [0, layers) and all devices
 *     {"first_layer": 0, "end_layer": 10,        // decoder layers [first_layer, end_layer)
 *      "nodes": 1, "devices": 8,                 // the sub-mesh
 *      "tensor_parallel": 8,                     // = nodes × devices
 *      "expert_parallel": 1,                     // groups the experts split into
 *      "has_embedding": true, "has_head": false,
 *      "seconds": 0.0123,                        // t_i for one workload step
 *      "memory_bytes": 2.1e10}                   // per device
 *   ],
 *   "latency_seconds": 0.098,          // Σ t_i
 *   "max_stage_seconds": 0.0123,       // the bottleneck stage
 *   "throughput_per_second": 81.3,     // workload steps per second in steady state = 1 / max
 *   "objective_seconds": 0.098,        // the minimised objective
 *   "slicing": null                    // or, when a prompt length was given:
 *   // {"prompt_tokens": 8192, "granularity": 8, "stages": 8,
 *   //  "optimal": {"slices": [1024, ...], "latency_seconds": ..., "total_slice_seconds": ...,
 *   //              "max_slice_seconds": ...},
 *   //  "best_uniform": {same fields, for the best split into equal slices},
 *   //  "speedup_over_uniform": 1.07}
 * }
 * \endcode
 * Times are seconds, memory bytes. Readers reject another "format" or "version", missing
 * fields, and stages that do not cover the layers and the mesh exactly; the expert fields, added
 * in 0.9, may be absent (a dense model, expert_parallel 1).
 *
 * \par Mixtures of experts
 * A layer's memory counts every expert; its time counts the experts a step reads (under even
 * routing, E·(1 − (1 − k/E)^tokens) distinct ones of E, k per token). A stage splits its experts
 * into `expert_parallel` groups of its devices, each group holding whole experts, each expert's
 * columns split over its group. Attention stays tensor-parallel over all the stage's devices, so
 * every device already has every token: the experts' products come back through the stage's
 * all-reduce, the same bytes as tensor parallelism moves, and the memory per device is the same
 * either way; the planner therefore splits experts by columns (1) unless they do not divide or
 * a device's columns would cut the blocks of a quantized type (which the device would widen to
 * f32), in which case it keeps whole experts together: Qwen3-30B-A3B in Q4_K_M over 8 devices
 * (768 columns, 256-value blocks) gets expert_parallel 8.
 *
 * \par Cost files
 * A cost file (JSON, `"format": "pagoda-costs"`) holds layer times measured on a backend: t(l, 0)
 * for every l on a grid and the fitted context term a0 + a1·l + a2·c + a3·l·c (TeraPipe Eq. 9),
 * keyed by backend, device and model shape. pagoda_cost_profile() (`pagoda profile`) writes one.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief What the stage partition minimises. */
typedef enum pagoda_plan_objective {
    PAGODA_PLAN_LATENCY = 0,    /**< One batch through the pipeline: Σ t_i. */
    PAGODA_PLAN_THROUGHPUT = 1  /**< B micro-batches: Σ t_i + (B − 1)·max t_i. */
} pagoda_plan_objective_t;

/** \brief How to plan. Initialise with pagoda_plan_options_default(). */
typedef struct pagoda_plan_options {
    uint32_t struct_size;      /**< sizeof(pagoda_plan_options_t) as the caller knows it. */
    int32_t objective;         /**< A ::pagoda_plan_objective_t; default ::PAGODA_PLAN_LATENCY. */
    int32_t micro_batches;     /**< B for ::PAGODA_PLAN_THROUGHPUT; default 1. */
    int32_t stages;            /**< Exactly this many stages; 0 = the planner's choice (default). */
    int32_t tensor_parallel;   /**< Every stage on this many devices; 0 = the planner's choice (default). */
    const char *device;        /**< Device preset: `"h100"` or `"cpu"`; NULL = `"cpu"`. */
    const char *cost_file;     /**< Measured layer costs for the model's shape, and the links between devices when it holds them (pagoda_link_profile()); NULL = analytic (default). */
    const char *mesh_shape;    /**< `"NxM"` (nodes × devices per node); NULL = one node of the mesh's devices. */
    int64_t step_tokens;       /**< New tokens per pipeline step, sizing stage times; default 2048. */
    int64_t context_tokens;    /**< Cached tokens before them; default 0. */
    int64_t kv_tokens;         /**< KV-cache tokens every layer reserves; default 0. */
    int64_t prompt_tokens;     /**< > 0: also slice a prompt this long across the stages; default 0. */
    int64_t granularity;       /**< Slices are multiples of this many tokens; default 8. */
    double epsilon_seconds;    /**< Skip bottleneck candidates closer than this (≤ B·ε, K·ε from optimal); default 0 = exact. */
    /* Appended in 0.9: mixtures of experts (a caller whose struct ends before it gets the default). */
    /**
     * Every stage splits a mixture of experts' experts into this many groups of its devices
     * (expert parallelism, the mesh's `ep` axis); 0 = the planner's choice (default): the
     * smallest power of two that divides the experts and leaves each expert's columns
     * splitting over its group in whole blocks of their type. Must be 0 or 1 for a dense model.
     */
    int32_t expert_parallel;
} pagoda_plan_options_t;

/** \brief One pipeline stage of a plan. */
typedef struct pagoda_plan_stage {
    uint32_t struct_size;     /**< Set by the caller to sizeof(pagoda_plan_stage_t). */
    int64_t first_layer;      /**< First decoder layer of the stage. */
    int64_t end_layer;        /**< One past its last decoder layer. */
    int32_t nodes;            /**< Sub-mesh: nodes it spans. */
    int32_t devices;          /**< Sub-mesh: devices per node it uses. */
    int32_t tensor_parallel;  /**< Devices the stage's layers are split over (nodes × devices). */
    int32_t has_embedding;    /**< 1 when the stage runs the token embedding (the first stage). */
    int32_t has_head;         /**< 1 when the stage runs the final norm and LM head (the last stage). */
    double seconds;           /**< Predicted time for one workload step, the send to the next stage included. */
    double memory_bytes;      /**< Predicted memory per device: weights, KV reservation, activations. */
    /* Appended in 0.9. */
    int32_t expert_parallel;  /**< Groups of the stage's devices its experts split into (1: every expert's columns over all of them, as a dense MLP's; always 1 for a dense model). */
} pagoda_plan_stage_t;

/** \brief A plan's predicted totals. */
typedef struct pagoda_plan_summary {
    uint32_t struct_size;          /**< Set by the caller to sizeof(pagoda_plan_summary_t). */
    size_t n_stages;               /**< Pipeline stages. */
    double latency_seconds;        /**< One step through every stage (Σ t_i). */
    double max_stage_seconds;      /**< The slowest stage. */
    double throughput_per_second;  /**< Steps per second in steady state (1 / max_stage_seconds). */
    double objective_seconds;      /**< The value the planner minimised. */
    size_t n_slices;               /**< Prompt slices; 0 when no prompt length was given. */
    double sliced_prefill_seconds; /**< Prefill latency with the optimal slices (TeraPipe Eq. 5). */
    double uniform_prefill_seconds;/**< Prefill latency with the best equal slices. */
} pagoda_plan_summary_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults listed with each field.
 *
 * Call it as pagoda_plan_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_plan_options_init(pagoda_plan_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_plan_options_init() with the caller's struct size. */
#define pagoda_plan_options_default(options) pagoda_plan_options_init((options), sizeof *(options))

/**
 * \brief Plans an opened model on a mesh.
 * \param[in] model the model (only its configuration is read).
 * \param[in] mesh the mesh, or NULL when `options->mesh_shape` gives the shape; with a mesh
 *            and no shape the plan uses one node of all the mesh's devices.
 * \param[in] options NULL for the defaults.
 * \param[out] out the plan; release with pagoda_plan_destroy(). Untouched on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a bad model or mesh;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for an option out of range (the message names it);
 *         ::PAGODA_ERR_NOT_FOUND for an unknown device preset or a cost file without the
 *         model's shape; ::PAGODA_ERR_IO or ::PAGODA_ERR_FORMAT for an unreadable cost file;
 *         ::PAGODA_ERR_UNSUPPORTED when no layout fits the devices' memory or M is not a power
 *         of two.
 * \par Thread safety
 * Safe from any thread; the handles are only read.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_create(const pagoda_model_t *model, const pagoda_mesh_t *mesh,
                                              const pagoda_plan_options_t *options, pagoda_plan_t **out);

/**
 * \brief Plans a model described by a Hugging Face `config.json`, without its weights.
 * \param[in] config_path the config.json file.
 * \param[in] options as for pagoda_plan_create(); `options->mesh_shape` is required.
 * \param[out] out the plan; release with pagoda_plan_destroy(). Untouched on failure.
 * \return as pagoda_plan_create(), plus ::PAGODA_ERR_IO for an unreadable file and
 *         ::PAGODA_ERR_FORMAT or ::PAGODA_ERR_UNSUPPORTED for a config it cannot use.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_create_from_config(const char *config_path,
                                                          const pagoda_plan_options_t *options,
                                                          pagoda_plan_t **out);

/**
 * \brief Releases a plan.
 * \param[in] plan the handle, or NULL.
 * \par Thread safety
 * Not while another call on this handle runs; caches and engines made with the plan keep what they
 * need of it.
 * \since 0.1
 */
PAGODA_API void pagoda_plan_destroy(pagoda_plan_t *plan);

/**
 * \brief Writes a plan as JSON (the schema above).
 * \param[in] plan the plan.
 * \param[out] json a NUL-terminated UTF-8 string; release with pagoda_free().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `json`.
 * \par Thread safety
 * Safe from any thread (a plan never changes after creation).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_to_json(const pagoda_plan_t *plan, char **json);

/**
 * \brief Reads a plan written by pagoda_plan_to_json().
 * \param[in] json the text (NUL-terminated).
 * \param[out] out the plan; release with pagoda_plan_destroy(). Untouched on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_FORMAT naming the field at fault (as a path such as
 *         `stages[2].end_layer`); ::PAGODA_ERR_INVALID_ARGUMENT for NULL arguments.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_from_json(const char *json, pagoda_plan_t **out);

/**
 * \brief The plan's predicted totals.
 * \param[in] plan the plan.
 * \param[in,out] summary set its `struct_size` first; fields past it are not written.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for NULL or a
 *         bad `struct_size`.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_get_summary(const pagoda_plan_t *plan, pagoda_plan_summary_t *summary);

/**
 * \brief One stage of the plan.
 * \param[in] plan the plan.
 * \param[in] index from 0 to `n_stages` − 1 (pagoda_plan_get_summary()).
 * \param[in,out] stage set its `struct_size` first; fields past it are not written.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT for an index
 *         out of range, NULL or a bad `struct_size`.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_get_stage(const pagoda_plan_t *plan, size_t index,
                                                 pagoda_plan_stage_t *stage);

/**
 * \brief The length of one prompt slice, in tokens.
 * \param[in] plan the plan.
 * \param[in] index from 0 to `n_slices` − 1 (pagoda_plan_get_summary()).
 * \return the length; 0 for an invalid handle or index.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API int64_t pagoda_plan_slice_length(const pagoda_plan_t *plan, size_t index);

/**
 * \brief The length of one prompt slice, in tokens, or why it cannot be told.
 * \param[in] plan the plan.
 * \param[in] index from 0 to `n_slices` − 1 (pagoda_plan_get_summary()).
 * \param[out] length the length; 0 on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed plan;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for an index out of range (any index when the plan was
 *         made without `prompt_tokens`) or a NULL `length`.
 * \par Thread safety
 * Safe from any thread (a plan never changes after creation).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_plan_slice_length_v2(const pagoda_plan_t *plan, size_t index,
                                                      int64_t *length);

/**
 * \name Serving simulation of a multi-model placement (AlpaServe)
 * A placement cuts a cluster into device groups, each running one (pipeline, tensor)
 * configuration and holding replicas of several models; the simulator serves Gamma-distributed
 * requests on it (per-group FCFS queues, dispatch to the group that finishes a request first,
 * rejection at arrival of requests that would miss their SLO) and reports SLO attainment.
 * The placement's JSON schema is documented in src/plan/placement.hpp and by
 * `pagoda simulate --help`:
 * \code{.json}
 * {"overhead": 0.004,                                // optional: seconds the serving
 *                                                    // system adds to every request
 *  "reject_late": false,                             // optional, default true: reject at
 *                                                    // arrival what would miss its SLO
 *  "models": [{"name": "a", "slo": 2.0}],            // "slo" (seconds) is optional
 *  "groups": [{"devices": [0, 1], "pipeline": 2, "tensor": 1,
 *              "replicas": [{"model": "a", "stage_seconds": [0.2, 0.2],
 *                            "stage_bytes": [6.7e9, 6.7e9]}]}]}   // "stage_bytes" optional
 * \endcode
 * @{
 */

/** Options of pagoda_placement_simulate(); fill with pagoda_simulate_options_default(). */
typedef struct pagoda_simulate_options {
    uint32_t struct_size;     /**< sizeof(pagoda_simulate_options_t), set by the default function. */
    double rate_per_model;    /**< Requests per second for every model (default 1). */
    double total_rate;        /**< When > 0: requests per second over all models, split evenly;
                                   overrides `rate_per_model` (default 0). */
    double cv;                /**< Coefficient of variation of inter-arrival times; 1 = Poisson (default 1). */
    double slo_seconds;       /**< SLO of models whose placement entry gives none; 0 = none (default 0). */
    double duration_seconds;  /**< Simulated time (default 3600). */
    uint64_t seed;            /**< Same seed, same requests (default 1). */
    double overhead_seconds;  /**< Added to every request's latency (default 0). */
    int32_t reject_late;      /**< Nonzero: reject at arrival what would miss its SLO (default 1). */
} pagoda_simulate_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults listed with each field.
 *
 * Call it as pagoda_simulate_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_simulate_options_init(pagoda_simulate_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_simulate_options_init() with the caller's struct size. */
#define pagoda_simulate_options_default(options) pagoda_simulate_options_init((options), sizeof *(options))

/**
 * \brief Simulates serving Gamma-distributed requests on a placement.
 * \param[in] placement_json the placement (schema above), NUL-terminated.
 * \param[in] options NULL for the defaults.
 * \param[out] result_json one JSON object: "requests", "served", "rejected", "within_slo",
 *             "slo_attainment", "rejected_share", "latency" {"mean", "p50", "p90", "p99", "max"}
 *             (seconds, served requests), "group_utilisation" (per group), "horizon_seconds",
 *             "per_model" [{"name", "requests", "within_slo", "rejected"}]; release with
 *             pagoda_free(). Untouched on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_FORMAT for malformed JSON or a field of the wrong type
 *         (the message names the byte or the field's path); ::PAGODA_ERR_INVALID_ARGUMENT for an
 *         inconsistent placement or an option out of range (the message names it) or NULLs.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_placement_simulate(const char *placement_json,
                                                     const pagoda_simulate_options_t *options,
                                                     char **result_json);

/**
 * \brief Searches for a placement of several models on a cluster (AlpaServe §4.2).
 *
 * Each model's cost on a group of `pipeline` stages × `tensor` devices comes from the stage
 * partitioner (as pagoda_plan_create() plans one model) for one request: with the layer times
 * measured on the real device when the cluster names a cost file (pagoda_cost_profile() writes
 * one), else with the analytic costs of the cluster's device preset. The search splits the models into
 * buckets of similar latency and the devices between the buckets, tries every group size and
 * parallel configuration per bucket, and fills the groups greedily with the replicas that most
 * raise SLO attainment as simulated on the workload (Algorithms 1 and 2 of the paper).
 *
 * The spec (JSON; relative `config` paths are opened from the current directory):
 * \code{.json}
 * {"cluster": {"nodes": 1,                    // optional, default 1
 *              "devices_per_node": 4,         // a power of two for groups inside a node
 *              "device": "h100",              // a device preset, as `pagoda plan --device`;
 *                                             //   optional, default "cpu"
 *              "memory_bytes": 16e9,          // optional: per device, overrides the preset's
 *                                             //   (or the cost file's devices')
 *              "costs": "costs.json"},        // optional: measured layer times per model shape
 *                                             //   (not with "device"); every model needs an entry;
 *                                             //   its measured links, if any, price communication
 *  "models": [{"name": "a",
 *              "config": "llama-7b/config.json",         // a Hugging Face config.json, or:
 *              "shape": {"hidden": 4096, "intermediate": 11008, "layers": 32, "heads": 32,
 *                        "kv_heads": 32, "vocab": 32000,
 *                        "head_dim": 128,               // optional, default hidden / heads
 *                        "tied_embeddings": false},     // optional
 *              "slo": 0.5,                    // optional: seconds; else workload->slo_seconds
 *              "rate": 2.0,                   // optional: requests per second; else the workload's
 *              "path": "llama-7b"}],          // optional: the model's file or folder, copied into
 *                                             // the placement for pagoda_server_add_placement()
 *  "request": {"tokens": 2048, "context": 0, "kv_tokens": 0},  // optional: one request's step,
 *                                      // or a generation: {"prompt_tokens": 8, "output_tokens": 16}
 *  "overhead": 0.01,                   // optional: seconds the server adds to every request
 *  "search": {"max_pipeline": 8, "max_tensor": 4,              // optional: the defaults shown
 *             "beam_width": 1, "fast_greedy": false}}
 * \endcode
 * Every model gives exactly one of "config" and "shape" (a "path" to a Hugging Face folder
 * stands for its config.json); names are distinct; unknown fields are errors. A generation
 * costs its prompt in one step, then one step per further output token, each after the tokens
 * before it, as the engine runs it. The "overhead" is added to every simulated request and
 * copied into the placement, whose server counts it too.
 *
 * \param[in] spec_json the spec, NUL-terminated.
 * \param[in] workload the traffic the placement is scored on, as pagoda_placement_simulate()
 *            draws it (rates, CV, duration, seed, default SLO, overhead, rejection); NULL for the
 *            defaults. A model's "rate" in the spec replaces the workload's rate for it.
 * \param[out] placement_json the placement in the schema pagoda_placement_simulate() reads,
 *             with "stage_bytes" per replica, plus a "search" object: "slo_attainment" (on the
 *             workload), "requests", "simulations" (simulator runs), "greedy_runs" and "seconds"
 *             (the search's wall time); with a cost file also "measured_tensor_parallel" (per
 *             model, the degrees timed on their devices) and "link_source" (as a plan's). When every model has the workload's rate,
 *             pagoda_placement_simulate() of this placement with the same `workload` reports the
 *             same attainment. Release with pagoda_free(). Untouched on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_FORMAT for malformed JSON (the message names the byte), a
 *         field of the wrong type or an unknown field (named by its path, such as
 *         `models[1].shape.hidden`); ::PAGODA_ERR_INVALID_ARGUMENT for an inconsistent spec (a
 *         repeated name, a non-positive size or SLO, both or neither of "config" and "shape",
 *         a cost file beside a device preset), a `workload` field out of range, or NULLs;
 *         ::PAGODA_ERR_NOT_FOUND for an unknown device preset or a cost file without a model's
 *         shape (the message names the model); ::PAGODA_ERR_IO for an unreadable config.json
 *         or cost file; ::PAGODA_ERR_UNSUPPORTED when a
 *         model fits no configuration within the devices' memory (the message names it).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_placement_search(const char *spec_json,
                                                   const pagoda_simulate_options_t *workload,
                                                   char **placement_json);

/** Options of pagoda_cost_profile(); fill with pagoda_cost_profile_options_default(). */
typedef struct pagoda_cost_profile_options {
    uint32_t struct_size;  /**< sizeof(pagoda_cost_profile_options_t), set by the default function. */
    int64_t max_tokens;    /**< L: the longest step and the longest context timed (default 128). */
    int64_t granularity;   /**< t(l, 0) is timed for l = g, 2g, …, L; L a multiple of g (default 8). */
    int32_t grid;          /**< The context term is fitted on grid × grid points (default 4). */
    int32_t repeats;       /**< Timed runs per point, the fastest kept (default 3). */
    /**
     * Other devices (`"cpu:1"`, or a group) that run the same work on their own thread while
     * each point is timed, or NULL (default). Devices that share a socket share its memory
     * bandwidth and cache, so a device that will serve beside a busy neighbour is best timed
     * beside one.
     */
    const char *beside;
} pagoda_cost_profile_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults listed with each field.
 *
 * Call it as pagoda_cost_profile_options_default(&options).
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_cost_profile_options_init(pagoda_cost_profile_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_cost_profile_options_init() with the caller's struct size. */
#define pagoda_cost_profile_options_default(options) \
    pagoda_cost_profile_options_init((options), sizeof *(options))

/**
 * \brief Times a model's decoder layers on a device and keeps the result in a cost file.
 *
 * Runs whole forward passes of the model (one sequence, logits for its last token, as a
 * serving step runs) for every step length l on the granularity grid, then for (l, c) points of
 * new tokens after cached ones, and divides by the layer count (the embedding and LM head are
 * spread over the layers): t(l, 0) per grid point plus the fitted context term of TeraPipe Eq. 9,
 * with the fit's error on held-out points. Several devices run each pass as one tensor-parallel
 * group (the model's heads and FFN split over them, as a mesh with `tp` runs them), so their
 * times hold the group's all-reduces; the entry records the degree as "tensor_parallel". The
 * entry is added to `cost_file` (created when missing), replacing one with the same backend,
 * device, model shape and degree; pagoda_plan_create() (`cost_file`) and
 * pagoda_placement_search() (`"costs"`) read it, taking a group's times as measured and
 * modelling the degrees that were not timed from the one-device entry, which they need.
 * \param[in] model_path a GGUF file or Hugging Face folder.
 * \param[in] device one device, such as `"cpu:0"`, or a group, such as `"cpu:0-1"`; the
 *            backend's own settings (threads) apply.
 * \param[in] options NULL for the defaults.
 * \param[in] cost_file the file to add the entry to.
 * \param[out] entry_json the entry as written, or NULL; release with pagoda_free().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for NULLs, an option out of range (the
 *         message names it), a group whose size does not divide the model's heads, or `beside`
 *         naming a timed device; ::PAGODA_ERR_NOT_FOUND for an unknown device; what opening the
 *         model returns for a bad model file; ::PAGODA_ERR_IO when the cost file cannot be
 *         written; ::PAGODA_ERR_FORMAT when the existing cost file is malformed.
 * \par Thread safety
 * Safe from any thread; the timings are only meaningful on an otherwise idle device.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_cost_profile(const char *model_path, const char *device,
                                               const pagoda_cost_profile_options_t *options,
                                               const char *cost_file, char **entry_json);

/** Options of pagoda_link_profile(); fill with pagoda_link_profile_options_default(). */
typedef struct pagoda_link_profile_options {
    uint32_t struct_size; /**< sizeof(pagoda_link_profile_options_t), set by the default function. */
    int64_t min_bytes;    /**< The smallest buffer timed, a multiple of 4 (default 4096). */
    int64_t max_bytes;    /**< The largest: sizes double from min_bytes up to it (default 8 MiB). */
    int32_t repeats;      /**< Timed rounds, each over every size; each size's median kept (default 10). */
} pagoda_link_profile_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults listed with each field.
 *
 * Call it as pagoda_link_profile_options_default(&options).
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_link_profile_options_init(pagoda_link_profile_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_link_profile_options_init() with the caller's struct size. */
#define pagoda_link_profile_options_default(options) \
    pagoda_link_profile_options_init((options), sizeof *(options))

/**
 * \brief Times the links between a mesh's devices and keeps them in a cost file, so that plans
 *        price communication with what was measured instead of the device preset's assumption.
 *
 * For each path the mesh has, the backend's own collectives, on the transport a mesh uses there,
 * run a two-device all-reduce and a ping-pong (half a round trip is one send) on buffers of
 * `min_bytes`, twice that, … up to `max_bytes`; each size keeps its median, and a latency and a
 * bandwidth are fitted to each call (least squares on the relative error). The paths:
 * `"within_process"` (two devices of one process, when each process has two or more),
 * `"within_machine"` (two processes of one machine: the CPU backend's shared memory) and
 * `"across_machines"` (rank 0 and the first rank on another machine: the CPU backend's TCP).
 * Each becomes an entry of the cost file's `"links"`, replacing one of the same backend and
 * path. pagoda_plan_create() (`cost_file`) and pagoda_placement_search() (`"costs"`) then price
 * a node's all-reduces and sends with `"within_machine"` (else `"within_process"`) and those
 * across nodes with `"across_machines"`; a ring all-reduce over t devices is extrapolated from
 * the two-device fit as 2(t−1) latencies plus 2(t−1)/t of the bytes over the bandwidth.
 * \param[in] mesh a mesh over several processes (every rank calls this at the same point,
 *            the others waiting while a pair times) or of two or more devices in one process.
 * \param[in] options NULL for the defaults.
 * \param[in] cost_file the file rank 0 adds the links to (the other ranks write nothing); NULL
 *            to only return them.
 * \param[out] links_json the links measured, as a JSON array of the file's entries (every rank
 *             gets the same), or NULL; release with pagoda_free().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a bad mesh; ::PAGODA_ERR_INVALID_ARGUMENT
 *         for an option out of range (the message names it); ::PAGODA_ERR_UNSUPPORTED for a mesh
 *         of one device in one process, or a backend without collectives; ::PAGODA_ERR_BACKEND
 *         when a collective fails or a rank does not answer within the mesh's timeout (the
 *         message names it); ::PAGODA_ERR_IO when the cost file cannot be written;
 *         ::PAGODA_ERR_FORMAT when the existing cost file is malformed.
 * \par Thread safety
 * Not concurrently with other work on the mesh's devices (the timings are only meaningful on
 * otherwise idle devices and links).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_link_profile(const pagoda_mesh_t *mesh, const pagoda_link_profile_options_t *options,
                                               const char *cost_file, char **links_json);
/** @} */

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_PLAN_H */
