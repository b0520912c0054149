#include "backend/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "backend/plugin_loader.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace fs = std::filesystem;

namespace pagoda {

namespace {

constexpr std::string_view kPrefix = "libpagoda-backend-";
constexpr std::string_view kSuffix = ".so";

// The <name> of "libpagoda-backend-<name>.so", or empty for any other file name.
std::string plugin_name_of(const std::string &file) {
    if (file.size() <= kPrefix.size() + kSuffix.size()) return {};
    if (file.compare(0, kPrefix.size(), kPrefix) != 0) return {};
    if (file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) return {};
    return file.substr(kPrefix.size(), file.size() - kPrefix.size() - kSuffix.size());
}

std::vector<std::string> split_path(const std::string &list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t colon = list.find(':', start);
        if (colon == std::string::npos) colon = list.size();
        if (colon > start) out.push_back(list.substr(start, colon - start));
        start = colon + 1;
    }
    return out;
}

// PAGODA_BACKEND_<NAME>_CONFIG for a plugin file "libpagoda-backend-<name>.so": the name
// upper-cased, any character other than a letter or digit as '_'. Empty for other file names.
std::string config_variable_of(const std::string &path) {
    std::string name = plugin_name_of(fs::path(path).filename().string());
    if (name.empty()) return {};
    for (char &c : name) {
        const auto u = static_cast<unsigned char>(c);
        c = std::isalnum(u) ? char(std::toupper(u)) : '_';
    }
    return "PAGODA_BACKEND_" + name + "_CONFIG";
}

}  // namespace

BackendRegistry &BackendRegistry::instance() {
    static BackendRegistry registry;
    return registry;
}

pagoda_backend *BackendRegistry::load(const std::string &path, const char *config) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    try {
        return load_locked(path, config);
    } catch (const Error &e) {
        skipped_.push_back(std::make_unique<SkippedPlugin>(SkippedPlugin{path, e.status(), e.what()}));
        throw;
    }
}

pagoda_backend *BackendRegistry::load_locked(const std::string &path, const char *config) {
    std::error_code ec;
    fs::path canonical = fs::canonical(path, ec);
    if (ec) throw Error(PAGODA_ERR_NOT_FOUND, path + ": " + ec.message());
    if (!fs::is_regular_file(canonical, ec))
        throw Error(PAGODA_ERR_NOT_A_PLUGIN, path + ": not a regular file");
    for (auto &b : backends_)
        if (b->path == canonical.string()) return b.get();

    // Without a config from the caller, the environment may give one, so that discovery (which
    // has none to give) can still set a plugin up, e.g. PAGODA_BACKEND_CPU_CONFIG=devices=4.
    std::string variable;
    if (config == nullptr) {
        variable = config_variable_of(path);
        const char *env = variable.empty() ? nullptr : std::getenv(variable.c_str());
        if (env != nullptr && *env != '\0') {
            config = env;
            log(PAGODA_LOG_DEBUG, path + ": config '" + env + "' from " + variable);
        } else {
            variable.clear();
        }
    }
    std::unique_ptr<pagoda_backend> backend;
    try {
        backend = load_plugin(canonical.string(), config);
    } catch (const Error &e) {
        if (variable.empty()) throw;
        throw Error(e.status(), std::string(e.what()) + " (config '" + config + "' from " +
                                    variable + ")");
    }
    if (pagoda_backend *other = find(backend->name))
        throw Error(PAGODA_ERR_ALREADY_EXISTS, path + ": a backend named '" + backend->name +
                                                   "' is already loaded from " + other->path);
    log(PAGODA_LOG_INFO, "loaded backend '" + backend->name + "' from " + backend->path);
    backends_.push_back(std::move(backend));
    return backends_.back().get();
}

size_t BackendRegistry::discover(const std::string &search_path, const std::string &only) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    size_t loaded = 0;
    for (const std::string &folder : split_path(search_path)) {
        std::error_code ec;
        std::vector<std::string> files;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            std::string file = it->path().filename().string();
            if (!plugin_name_of(file).empty()) files.push_back(file);
        }
        if (ec) {
            log(PAGODA_LOG_DEBUG, "backend search: skipping folder " + folder + ": " + ec.message());
            continue;
        }
        std::sort(files.begin(), files.end());  // a stable order, whatever the file system's
        for (const std::string &file : files) {
            std::string name = plugin_name_of(file);
            if (!only.empty() && name != only) continue;
            std::string full = (fs::path(folder) / file).string();
            if (pagoda_backend *b = find(name)) {
                std::error_code same_ec;
                if (!fs::equivalent(b->path, full, same_ec))
                    log(PAGODA_LOG_INFO, "backend search: " + full + " ignored, '" + name +
                                             "' is already loaded from " + b->path);
                continue;
            }
            // A file that failed once fails again (no driver, a bad config): one record, one line.
            if (was_skipped(full)) continue;
            try {
                load(full, nullptr);
                ++loaded;
            } catch (const Error &e) {
                // No device of the plugin's kind is how most machines are, not a fault.
                log(e.status() == PAGODA_ERR_NOT_FOUND ? PAGODA_LOG_INFO : PAGODA_LOG_WARN,
                    std::string("skipped backend: ") + e.what());
            }
        }
    }
    return loaded;
}

size_t BackendRegistry::count() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return backends_.size();
}

pagoda_backend *BackendRegistry::at(size_t index) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return index < backends_.size() ? backends_[index].get() : nullptr;
}

pagoda_backend *BackendRegistry::find(const std::string &name) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    for (auto &b : backends_)
        if (b->name == name) return b.get();
    return nullptr;
}

std::string BackendRegistry::names() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    std::string out;
    for (auto &b : backends_) out += (out.empty() ? "" : ", ") + b->name;
    return out.empty() ? "none" : out;
}

bool BackendRegistry::was_skipped(const std::string &path) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    for (const auto &s : skipped_)
        if (s->path == path) return true;
    return false;
}

size_t BackendRegistry::skipped_count() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return skipped_.size();
}

const SkippedPlugin *BackendRegistry::skipped(size_t index) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return index < skipped_.size() ? skipped_[index].get() : nullptr;
}

void BackendRegistry::unload_all() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    // Newest first, so a backend loaded later (which might use an earlier one) goes first.
    while (!backends_.empty()) backends_.pop_back();
    skipped_.clear();
}

std::string default_backend_search_path() {
    std::string path;
    if (const char *env = std::getenv("PAGODA_BACKEND_PATH"); env != nullptr) path = env;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&default_backend_search_path), &info) != 0 &&
        info.dli_fname != nullptr) {
        std::error_code ec;
        fs::path self = fs::canonical(info.dli_fname, ec);
        if (!ec) path += (path.empty() ? "" : ":") + self.parent_path().string();
    }
    return path;
}

}  // namespace pagoda
