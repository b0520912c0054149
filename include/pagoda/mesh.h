/**
 * \file mesh.h
 * \brief Meshes: the devices a model is served on, arranged on named axes.
 */
#ifndef PAGODA_MESH_H
#define PAGODA_MESH_H

#include "pagoda/common.h"
#include "pagoda/status.h"

/**
 * \defgroup mesh Meshes
 * \brief Devices are named `<backend>:<index>` (`cpu:0`, `cuda:3`); a list joins them with
 *        commas and ranges (`cuda:0-3,cuda:6`). A backend the list names that is not loaded
 *        is looked for on the default search path (pagoda_backends_discover()), and only the
 *        backends named are loaded. A mesh of several devices runs a model in pipeline
 *        stages, each tensor-parallel over its devices, as a plan says (plan.h); its axes, when
 *        named, fix the layout: `pp` stages of `tp` × `ep` devices each (attention and dense
 *        layers split over all of them; a mixture of experts' experts split into `ep` groups of
 *        `tp` devices, each group holding whole experts, each expert's columns split over its
 *        group; `ep` needs a mixture-of-experts model), repeated `kvp` times for
 *        cache parallelism (every KV block split into `kvp` runs of tokens, one per copy, their
 *        attention merged by log-sum-exp), device `i` of the list at the row-major coordinates
 *        of the axes in the order given (the last varies fastest). `dp` larger than 1 is
 *        refused for now. The CPU backend offers several logical devices
 *        (its `devices` config key, or the environment variable `PAGODA_BACKEND_CPU_CONFIG`),
 *        so any machine can run a multi-device layout.
 *
 *        A mesh may span the processes of one launch (ranks started by `mpirun`, or by the host
 *        itself): each process names its own devices, every process as many, and the mesh is
 *        their lists rank after rank (device `i` of rank `r` is mesh device `r·n + i`, named
 *        `cpu:0@rank1`). pagoda_mesh_create() then blocks until every rank has called it and
 *        checks that they agree. The ranks meet through the host's broadcast when it gives one
 *        (MPI_Bcast, say), else on a TCP rendezvous address (`host:port`, only for these first
 *        bytes, never for tensors); under `mpirun` on one machine they find a loopback address by
 *        themselves. Tensors travel through the backend's collectives (the CPU backend's over
 *        shared memory between processes of one machine and over TCP (Gloo) between machines;
 *        NCCL between GPUs). The ranks tell each other their machine (the kernel's boot id and
 *        the `/dev/shm` each sees); when they are on several, collectives are made for the
 *        network, and a backend whose collectives cannot span machines fails
 *        pagoda_mesh_create() on every rank at once, naming the machines. Every rank then makes the
 *        same cache and engine: rank 0 serves, the others follow it (pagoda_engine_follow()).
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief A host's broadcast among every process of its launch, such as `MPI_Bcast` on
 *        `MPI_COMM_WORLD`: every rank passes `bytes` at `data`; on return each holds rank
 *        `root`'s. Returns ::PAGODA_OK, or any other status on failure.
 */
typedef pagoda_status_t (*pagoda_bootstrap_broadcast_fn)(void *user, void *data, size_t bytes, int32_t root);

/** \brief How to build a mesh. Initialise with pagoda_mesh_options_default(). */
typedef struct pagoda_mesh_options {
    uint32_t struct_size; /**< sizeof(pagoda_mesh_options_t) as the caller knows it. */
    const char *devices;  /**< This process's device list; NULL or `""` = `"cpu:0"`. */
    const char *axes;     /**< Axis sizes such as `"pp=2,tp=4"` (names pp, tp, ep, kvp, dp) over the whole mesh; NULL or `""` = none: the plan decides the layout. */
    /* Appended: meshes over several processes (a caller whose struct ends before them gets one). */
    /**
     * This process's rank in its launch; -1 (the default) = from the environment:
     * `PAGODA_RANK`, else OpenMPI's `OMPI_COMM_WORLD_RANK`, else 0.
     */
    int32_t rank;
    /**
     * Processes in the launch; 0 (the default) = from the environment: `PAGODA_WORLD_SIZE`,
     * else `OMPI_COMM_WORLD_SIZE`, else 1.
     */
    int32_t world_size;
    /**
     * `host:port` (or `[v6]:port`) where rank 0 listens and the others connect; NULL or `""` =
     * `PAGODA_RENDEZVOUS`, else, under a one-machine `mpirun`, a loopback port picked from its
     * job id. Ignored with `bootstrap` or one process.
     */
    const char *rendezvous;
    pagoda_bootstrap_broadcast_fn bootstrap; /**< The host's broadcast instead of a rendezvous; NULL = none. */
    void *bootstrap_user;                     /**< First argument of `bootstrap`. */
    /**
     * How long a rank waits for the others (to meet, and in each collective) before its call
     * fails, so that a rank that died or hangs fails the others in bounded time; 0 = 30 s.
     */
    int64_t timeout_ms;
} pagoda_mesh_options_t;

/**
 * \brief Fills the first `size` bytes of `options` with the defaults (`cpu:0`, no axes, rank
 *        and world size from the environment).
 *
 * Call it as pagoda_mesh_options_default(&options), which passes the size the caller was
 * compiled with, so a host built against older headers is never written past the end of its
 * struct. Bindings pass their struct's size.
 * \param[out] options the struct to fill; its `struct_size` is set to the bytes filled.
 * \param[in] size bytes in the caller's struct.
 * \par Thread safety
 * Safe from any thread; touches only `options`.
 * \since 0.1
 */
PAGODA_API void pagoda_mesh_options_init(pagoda_mesh_options_t *options, size_t size);

/** \brief Fills `options` with the defaults: pagoda_mesh_options_init() with the caller's struct size. */
#define pagoda_mesh_options_default(options) pagoda_mesh_options_init((options), sizeof *(options))

/**
 * \brief Builds a mesh.
 * \param[in] options NULL for the defaults.
 * \param[out] out the mesh; release with pagoda_mesh_destroy().
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_ARGUMENT for a malformed list or axes whose product
 *         is not the device count, a rank outside the world, several processes with no way to
 *         meet, or ranks that disagree (the message names the first); ::PAGODA_ERR_NOT_FOUND for
 *         a backend that neither is loaded nor loads from the search path (the message lists
 *         those loaded) or a device it does not have; ::PAGODA_ERR_BACKEND when the other ranks
 *         do not meet within `timeout_ms` or one fails (the message names it).
 * \par Thread safety
 * Safe from any thread; over several processes every rank calls it once, in the same order as
 * its other meshes.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_mesh_create(const pagoda_mesh_options_t *options,
                                              pagoda_mesh_t **out);

/**
 * \brief Releases a mesh. Engines and caches made on it keep what they need alive.
 * \param[in] mesh the handle, or NULL.
 * \par Thread safety
 * Not while another call on this handle runs; engines, caches and plans made with the mesh keep
 * what they need of it.
 * \since 0.1
 */
PAGODA_API void pagoda_mesh_destroy(pagoda_mesh_t *mesh);

/**
 * \brief Number of devices in the mesh.
 * \param[in] mesh the handle.
 * \return the count; 0 for an invalid handle.
 * \par Thread safety
 * Safe from any thread (a mesh never changes after creation).
 * \since 0.1
 */
PAGODA_API size_t pagoda_mesh_device_count(const pagoda_mesh_t *mesh);

/**
 * \brief The name of the mesh's `index`-th device, such as `"cpu:0"`.
 * \param[in] mesh the handle.
 * \param[in] index from 0 to pagoda_mesh_device_count() - 1.
 * \return a string valid as long as the mesh; NULL for an invalid handle or index.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_mesh_device_name(const pagoda_mesh_t *mesh, size_t index);

/**
 * \brief Number of devices in the mesh, or why it cannot be told.
 * \param[in] mesh the handle.
 * \param[out] count the count; 0 on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed mesh;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL `count`.
 * \par Thread safety
 * Safe from any thread (a mesh never changes after creation).
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_mesh_device_count_v2(const pagoda_mesh_t *mesh, size_t *count);

/**
 * \brief The name of the mesh's `index`-th device, or why it cannot be told.
 * \param[in] mesh the handle.
 * \param[in] index from 0 to the device count - 1.
 * \param[out] name a string valid as long as the mesh; NULL on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed mesh;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for an index out of range or a NULL `name`.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_mesh_device_name_v2(const pagoda_mesh_t *mesh, size_t index,
                                                      const char **name);

/**
 * \brief This process's rank and the number of processes the mesh spans (0 and 1 for a mesh
 *        in one process).
 * \param[in] mesh the handle.
 * \param[out] rank this process's rank.
 * \param[out] world_size the processes of the mesh.
 * \return ::PAGODA_OK; ::PAGODA_ERR_INVALID_HANDLE for a NULL or destroyed mesh;
 *         ::PAGODA_ERR_INVALID_ARGUMENT for a NULL output.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_mesh_world(const pagoda_mesh_t *mesh, int32_t *rank, int32_t *world_size);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_MESH_H */
