/**
 * \file server.h
 * \brief The OpenAI-compatible HTTP server: engines served over HTTP/1.1 on a libuv loop.
 */
#ifndef PAGODA_SERVER_H
#define PAGODA_SERVER_H

#include "pagoda/common.h"
#include "pagoda/engine.h"
#include "pagoda/kv_cache.h"
#include "pagoda/status.h"

/**
 * \defgroup server HTTP server
 * \brief Serves one or several engines, each under a model name, with the endpoints vLLM and
 *        llama-server offer: `POST /v1/completions`, `POST /v1/chat/completions` (JSON or
 *        Server-Sent Events), `GET /v1/models`, `GET /health`, `POST /tokenize`,
 *        `POST /detokenize`, `POST /apply-template` (a chat request's prompt text, not
 *        generated) and `GET /metrics` (Prometheus text).
 *
 * The server runs a libuv loop, on a thread of its own (pagoda_server_start()) or on the host's
 * (pagoda_server_start_on_loop()), and one driver thread per engine that calls
 * pagoda_engine_step() while the engine has work. While it serves an engine the server owns the
 * engine's outputs: the host must not poll it, and the engine must have been made without an
 * output callback (::pagoda_engine_options_t::on_output NULL). Errors reach HTTP clients as
 * OpenAI's error object, `{"error":{"message","type","param","code"}}`.
 *
 * Typical use:
 * \code
 * pagoda_server_options_t so;  pagoda_server_options_default(&so);
 * so.port = 8000;
 * pagoda_server_t *server;     pagoda_server_create(&so, &server);
 * pagoda_server_add_model(server, "stories", engine);
 * pagoda_server_start(server);
 * ...                                         // serve until asked to stop
 * pagoda_server_stop(server);                 // finish or abort what is in flight
 * pagoda_server_destroy(server);              // then destroy the engines
 * \endcode
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/** \brief A running (or ready to run) HTTP server over engines. */
typedef struct pagoda_server pagoda_server_t;

/** \brief Where and how the server listens. Initialise with pagoda_server_options_default(). */
typedef struct pagoda_server_options {
    uint32_t struct_size;         /**< sizeof(pagoda_server_options_t) as the caller knows it. */
    int32_t port;                 /**< TCP port; 0 (the default) picks a free one, read back with
                                       pagoda_server_port(). */
    const char *host;             /**< IPv4 or IPv6 address to bind; NULL = "127.0.0.1" (default).
                                       Copied at create. */
    const char *api_key;          /**< When set, every `/v1/...`, `/tokenize`, `/detokenize` and
                                       `/apply-template` request must carry `Authorization:
                                       Bearer <api_key>` (401 otherwise); NULL (default) = no
                                       key. Copied at create. */
    const char *cors_allowed_origins; /**< Comma-separated origins that may call the server
                                       from a browser (`https://a.example,https://b.example`), or
                                       `*` for any; NULL (default) = no CORS headers. Copied. */
    int64_t max_header_bytes;     /**< Request line plus headers at most (431 beyond); default 16384. */
    int64_t max_body_bytes;       /**< Request body at most, chunked bodies decoded (413 beyond);
                                       default 8 MiB. */
    int64_t idle_timeout_ms;      /**< A connection with no request in progress is closed after
                                       this long; default 60000; 0 = never. */
    int64_t request_timeout_ms;   /**< Time allowed to receive one whole request, from its first
                                       byte to its last (a slow or truncated request gets 408 and
                                       is closed); default 30000; 0 = unlimited. Generation time
                                       is not counted. */
    int64_t drain_timeout_ms;     /**< pagoda_server_stop() lets requests in flight finish for
                                       this long, then aborts them; default 10000. */
    int64_t max_unsent_bytes;     /**< Response bytes waiting for a client that does not read
                                       them, at most: beyond, the connection is closed and its
                                       request aborted (its KV blocks freed), so a stalled
                                       client cannot grow the server's memory; default 16 MiB.
                                       Bytes the kernel's socket buffers hold are not counted. */
} pagoda_server_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults.
 *
 * Call it as pagoda_server_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API void pagoda_server_options_init(pagoda_server_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_server_options_init() with the caller's struct size. */
#define pagoda_server_options_default(options) pagoda_server_options_init((options), sizeof *(options))

/**
 * \brief Makes a server; it serves nothing and listens nowhere until started.
 * \param[in] options NULL for the defaults.
 * \param[out] out the server; release with pagoda_server_destroy().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for a negative or too large port or limit,
 *         or an empty API key.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_create(const pagoda_server_options_t *options,
                                                pagoda_server_t **out);

/**
 * \brief Serves `engine` under the model name `name` (the `model` field of requests).
 *
 * May be called before or after the server starts: `GET /health` answers 503 until a model is
 * served, so a host can listen first and load its models after. The engine's model must carry a
 * tokenizer for text prompts, `/tokenize` and `/detokenize`. The engine must outlive the server
 * (destroy the server first) and must not be polled or stepped by anyone else meanwhile.
 * \param[in] server the server.
 * \param[in] name the model name clients ask for, 1 to 256 bytes of UTF-8 (copied).
 * \param[in] engine the engine.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT (an empty or too
 *         long name, an engine with an output callback, a stopped server);
 *         ::PAGODA_ERR_ALREADY_EXISTS (the name or the engine is already served).
 * \par Thread safety
 * Safe from any thread, concurrently with the server running.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_add_model(pagoda_server_t *server, const char *name,
                                                   pagoda_engine_t *engine);

/**
 * \brief Serves every model of an AlpaServe placement, each replica an engine on its group's
 *        devices, and routes requests among a model's replicas as the placement's simulator
 *        does.
 *
 * The placement is the JSON pagoda_placement_search() (`pagoda place`) writes: groups of device
 * ids, each run as `pipeline` stages of `tensor` devices, each holding replicas of some models
 * with their per-stage latencies. Every model with a replica needs a `"path"` (a GGUF file or a
 * Hugging Face folder). For each replica the model is opened (its weights loaded once per
 * replica), a mesh made over the group's devices (device id `d` is `<device_kind>:d`, axes
 * `pp=pipeline,tp=tensor`), a KV cache and an engine. A request for a model goes to the replica
 * where the placement's stage clocks say it would finish first; one predicted to finish past
 * the model's SLO is rejected at arrival with HTTP 429 (code `slo_unattainable`) and counted in
 * `GET /metrics` as `pagoda_slo_rejected_requests_total`. Replicas appear in the engine metrics
 * with a `placement_group` label; `GET /v1/models` lists each model once.
 *
 * All or nothing: every replica is made before any is served; when one cannot be made, those
 * made are released and the error names the group and the model.
 * \param[in] server the server, serving no model yet.
 * \param[in] placement_json the placement (UTF-8 JSON text).
 * \param[in] device_kind the backend whose devices the ids number; NULL = `"cpu"`.
 * \param[in] engine_options every replica's engine options; NULL = defaults.
 * \param[in] kv_options every replica's KV cache options; NULL = defaults.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_FORMAT or
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a placement that does not parse or validate or a
 *         model with a replica and no path; ::PAGODA_ERR_ALREADY_EXISTS when the server serves a
 *         model already; else the status of the first replica that could not be made (such as
 *         ::PAGODA_ERR_NOT_FOUND for a device that does not exist, ::PAGODA_ERR_OUT_OF_MEMORY
 *         for a model too large for its group), its message naming the group and the model.
 * \par Thread safety
 * Safe from any thread, concurrently with the server running; it may take long (loading).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_add_placement(pagoda_server_t *server,
                                                       const char *placement_json,
                                                       const char *device_kind,
                                                       const pagoda_engine_options_t *engine_options,
                                                       const pagoda_kv_cache_options_t *kv_options);

/**
 * \brief Binds, listens, and runs the server on a thread of its own; returns once listening.
 * \param[in] server the server, not started before.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE; ::PAGODA_ERR_INVALID_ARGUMENT (already
 *         started, a host that is not an IP address); ::PAGODA_ERR_IO (the address cannot be
 *         bound; the message says why, such as "address already in use").
 * \par Thread safety
 * Call from one thread at a time, not concurrently with pagoda_server_stop() or destroy.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_start(pagoda_server_t *server);

/**
 * \brief Binds, listens, and serves on the host's libuv loop; returns once listening.
 *
 * The server's handles join `uv_loop`; the host runs the loop (`uv_run`) and the server's
 * callbacks run on that thread. As in any libuv program, that thread must ignore or block
 * SIGPIPE (a client that leaves mid-answer raises it); pagoda_server_start() blocks it on its
 * own thread. After pagoda_server_stop() the host keeps running the loop until
 * pagoda_server_is_running() gives 0, and only then destroys the server.
 * \param[in] server the server, not started before.
 * \param[in] uv_loop a `uv_loop_t *`, initialised, run by the host on one thread.
 * \return as pagoda_server_start(); ::PAGODA_ERR_INVALID_ARGUMENT for a NULL loop.
 * \par Thread safety
 * Call on the thread that runs `uv_loop` (or before that thread runs it).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_start_on_loop(pagoda_server_t *server, void *uv_loop);

/**
 * \brief The TCP port the server listens on (the one picked when the options asked for 0).
 * \param[in] server the server.
 * \return the port, or -1 for an invalid handle or a server that is not listening.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API int32_t pagoda_server_port(const pagoda_server_t *server);

/**
 * \brief Stops gracefully: stops accepting connections, closes idle ones, lets requests in flight
 *        finish for `drain_timeout_ms`, then aborts the rest (their engine requests end and free
 *        their KV blocks; streams end with finish reason `abort`, other requests get 503), closes
 *        every connection and joins the driver threads.
 *
 * On a server with its own thread it returns once all that is done. On a host's loop, called on
 * the loop's thread, it starts the drain and returns at once (the host runs the loop until
 * pagoda_server_is_running() gives 0); called from another thread it waits for the drain, which
 * needs the host's loop running. Stopping a stopped or never started server does nothing.
 * \param[in] server the server.
 * \return ::PAGODA_OK or ::PAGODA_ERR_INVALID_HANDLE.
 * \par Thread safety
 * Safe from any thread; a server cannot be started again after.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_server_stop(pagoda_server_t *server);

/**
 * \brief Whether the server is listening or still draining.
 * \param[in] server the server.
 * \return 1 from a successful start until the stop has closed every handle, else 0 (also for an
 *         invalid handle).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API int pagoda_server_is_running(const pagoda_server_t *server);

/**
 * \brief Stops the server (as pagoda_server_stop()) and releases it; the engines stay the host's.
 *
 * On a host's loop, stop the server and run the loop until pagoda_server_is_running() gives 0
 * first: a server still running there is left allocated (leaked) rather than freed under its
 * handles.
 * \param[in] server the handle, or NULL.
 * \par Thread safety
 * Not concurrently with any other call on the same server.
 * \since 0.1
 */
PAGODA_API void pagoda_server_destroy(pagoda_server_t *server);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_SERVER_H */
