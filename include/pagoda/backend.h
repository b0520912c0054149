/**
 * \file backend.h
 * \brief Backends: the host's functions to load, discover and list backend plugins and their
 *        devices. What a plugin implements, the plugin ABI, is in plugin.h (included).
 */
#ifndef PAGODA_BACKEND_H
#define PAGODA_BACKEND_H

#include "pagoda/plugin.h"

/**
 * \defgroup backend Backends
 * \brief The host-facing backend registry.
 * @{
 */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Host-facing registry                                                                        */
/* ------------------------------------------------------------------------------------------ */

/**
 * \brief A loaded backend plugin. Owned by the process-wide registry: valid from load until
 *        pagoda_backends_unload_all() or process exit; never freed by the host.
 */
typedef struct pagoda_backend pagoda_backend_t;

/**
 * \brief Loads the backend plugin at `path` and adds it to the registry.
 *
 * Loading the same file twice returns the handle loaded first. A plugin whose `name` is
 * already registered from another file is refused with ::PAGODA_ERR_ALREADY_EXISTS.
 * \param[in] path a shared object's path.
 * \param[in] config the plugin's configuration (see ::pagoda_backend_entry_fn), or NULL: then
 *            for a file named `libpagoda-backend-<name>.so` the environment variable
 *            `PAGODA_BACKEND_<NAME>_CONFIG` gives it, if set (see pagoda_backends_discover()).
 * \param[out] out the backend on success; untouched on failure.
 * \return ::PAGODA_OK; ::PAGODA_ERR_NOT_FOUND (no such file); ::PAGODA_ERR_NOT_A_PLUGIN (not a
 *         shared object, or no entry symbol); ::PAGODA_ERR_ABI_MISMATCH; or the entry's own
 *         status. The message names the file and the reason.
 * \par Thread safety
 * Safe from any thread; the registry is locked.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_load(const char *path, const char *config,
                                               pagoda_backend_t **out);

/**
 * \brief Loads every `libpagoda-backend-<name>.so` found on a search path.
 *
 * With `search_path` NULL, the folders of the environment variable `PAGODA_BACKEND_PATH`
 * (colon-separated) are searched first, then the folder libpagoda itself was loaded from. A
 * plugin that fails to load is logged (a warning; an info line when it found no device of its
 * kind, ::PAGODA_ERR_NOT_FOUND), recorded (see pagoda_backend_skipped_count()) and skipped; later
 * discoveries leave that file alone (pagoda_backend_load() retries it; pagoda_backends_unload_all()
 * forgets the record). A file whose `<name>` is already loaded is ignored without a record, so
 * earlier folders take precedence and repeated discoveries are harmless.
 *
 * Each plugin is configured from the environment variable `PAGODA_BACKEND_<NAME>_CONFIG`, with
 * `<NAME>` the file's `<name>` upper-cased and any character other than a letter or digit
 * replaced by `_`: for example `PAGODA_BACKEND_CPU_CONFIG="devices=2,threads=2"` makes the CPU
 * backend a two-device mesh (see ::pagoda_backend_entry_fn for each backend's keys). Unset or
 * empty, the plugin gets no config and uses its defaults. A config the plugin refuses skips it,
 * with a message naming the variable.
 * \param[in] search_path colon-separated folders, or NULL for the default.
 * \param[out] loaded_count if not NULL, the number of backends newly loaded by this call.
 * \return ::PAGODA_OK even when some plugins were skipped; ::PAGODA_ERR_INVALID_ARGUMENT for an
 *         empty path.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backends_discover(const char *search_path,
                                                    size_t *loaded_count);

/**
 * \brief Number of backends in the registry.
 * \return the count; 0 before any load.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API size_t pagoda_backend_count(void);

/**
 * \brief The backend at `index` in load order.
 * \param[in] index 0 ≤ index < pagoda_backend_count().
 * \param[out] out the backend; untouched on failure.
 * \return ::PAGODA_OK or ::PAGODA_ERR_NOT_FOUND.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_get(size_t index, pagoda_backend_t **out);

/**
 * \brief The backend registered under `name`.
 * \param[in] name such as `"cpu"`.
 * \param[out] out the backend; untouched on failure.
 * \return ::PAGODA_OK or ::PAGODA_ERR_NOT_FOUND (the message lists the loaded names).
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_find(const char *name, pagoda_backend_t **out);

/**
 * \brief The backend's short name, such as `"cpu"`.
 * \param[in] backend a loaded backend, or NULL.
 * \return the name, valid as long as the backend; NULL for a NULL or invalid handle.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_backend_name(const pagoda_backend_t *backend);

/**
 * \brief The backend's one-line description.
 * \param[in] backend a loaded backend, or NULL.
 * \return the description, valid as long as the backend; NULL for a NULL or invalid handle.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_backend_description(const pagoda_backend_t *backend);

/**
 * \brief The file the backend was loaded from.
 * \param[in] backend a loaded backend, or NULL.
 * \return the canonical path, valid as long as the backend; NULL for a NULL or invalid handle.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API const char *pagoda_backend_path(const pagoda_backend_t *backend);

/**
 * \brief Number of devices the backend drives.
 * \param[in] backend a loaded backend.
 * \param[out] count the number of devices.
 * \return ::PAGODA_OK, ::PAGODA_ERR_INVALID_HANDLE, or the backend's failure.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_device_count(const pagoda_backend_t *backend,
                                                       int32_t *count);

/**
 * \brief Describes one device.
 * \param[in] backend a loaded backend.
 * \param[in] device 0 ≤ device < count.
 * \param[out] info filled; the caller sets `info->struct_size` first.
 * \return ::PAGODA_OK, ::PAGODA_ERR_INVALID_HANDLE, ::PAGODA_ERR_NOT_FOUND, or the backend's
 *         failure.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_device_info(const pagoda_backend_t *backend,
                                                      int32_t device,
                                                      pagoda_device_info_t *info);

/**
 * \brief The backend's raw interface table, for hosts and tools that drive kernels themselves
 *        (benchmarks, backend conformance tests).
 * \param[in] backend a loaded backend.
 * \return the table, owned by the backend; NULL for a NULL or invalid handle.
 * \par Thread safety
 * Safe from any thread; the table's own functions say theirs.
 * \since 0.1
 */
PAGODA_API const pagoda_backend_iface_t *pagoda_backend_interface(const pagoda_backend_t *backend);

/**
 * \brief Number of plugins skipped by loads and discoveries so far.
 * \return the count.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API size_t pagoda_backend_skipped_count(void);

/**
 * \brief Why the `index`-th skipped plugin was skipped.
 * \param[in] index 0 ≤ index < pagoda_backend_skipped_count().
 * \param[out] path if not NULL, the file; valid until pagoda_backends_unload_all().
 * \param[out] status if not NULL, the status its load returned.
 * \param[out] message if not NULL, the reason; valid until pagoda_backends_unload_all().
 * \return ::PAGODA_OK or ::PAGODA_ERR_NOT_FOUND.
 * \par Thread safety
 * Safe from any thread.
 * \since 0.1
 */
PAGODA_API pagoda_status_t pagoda_backend_skipped(size_t index, const char **path,
                                                  pagoda_status_t *status,
                                                  const char **message);

/**
 * \brief Destroys every loaded backend, closes their files and clears the skipped list.
 *
 * Every handle obtained before becomes invalid. The caller must have destroyed everything that
 * uses a backend (engines, KV caches, meshes) first.
 * \par Thread safety
 * Must not run concurrently with any other use of a backend.
 * \since 0.1
 */
PAGODA_API void pagoda_backends_unload_all(void);

#ifdef __cplusplus
}
#endif

/** @} */

#endif /* PAGODA_BACKEND_H */
