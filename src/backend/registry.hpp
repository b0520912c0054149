// The process-wide list of loaded backends and of plugins that were skipped, with discovery.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/loaded_backend.hpp"

namespace pagoda {

struct SkippedPlugin {
    std::string path;
    pagoda_status_t status;
    std::string message;
};

class BackendRegistry {
public:
    static BackendRegistry &instance();

    // Loads `path` (or returns the backend already loaded from that file). Throws Error; a
    // failure is also recorded as skipped.
    pagoda_backend *load(const std::string &path, const char *config);

    // Loads every libpagoda-backend-<name>.so in the folders of `search_path` (colon-separated),
    // or only those of backend `only` when it is given, skipping names already loaded. Returns
    // how many were loaded.
    size_t discover(const std::string &search_path, const std::string &only = "");

    size_t count();
    pagoda_backend *at(size_t index);  // NULL when out of range
    pagoda_backend *find(const std::string &name);  // NULL when absent
    std::string names();  // "cpu, cuda" for messages
    size_t skipped_count();
    const SkippedPlugin *skipped(size_t index);  // NULL when out of range
    bool was_skipped(const std::string &path);   // a failed load of this path is on record
    void unload_all();

private:
    pagoda_backend *load_locked(const std::string &path, const char *config);

    std::recursive_mutex mutex_;
    std::vector<std::unique_ptr<pagoda_backend>> backends_;
    // A deque would do too; pointers into it are handed out, so entries are never moved.
    std::vector<std::unique_ptr<SkippedPlugin>> skipped_;
};

// The default search path: PAGODA_BACKEND_PATH's folders, then libpagoda's own folder.
std::string default_backend_search_path();

}  // namespace pagoda
