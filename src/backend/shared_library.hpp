// An open shared object (dlopen), closed when the owner goes.
#pragma once

#include <string>

namespace pagoda {

class SharedLibrary {
public:
    SharedLibrary() = default;
    explicit SharedLibrary(void *handle) : handle_(handle) {}
    ~SharedLibrary();
    SharedLibrary(SharedLibrary &&other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
    SharedLibrary &operator=(SharedLibrary &&other) noexcept;
    SharedLibrary(const SharedLibrary &) = delete;
    SharedLibrary &operator=(const SharedLibrary &) = delete;

    // Opens `path` with RTLD_NOW | RTLD_LOCAL: unresolved symbols fail here rather than at a
    // later call, and the plugin's symbols never satisfy another object's.
    // On failure the result is empty and `error` holds dlerror()'s text.
    static SharedLibrary open(const std::string &path, std::string &error);

    // The address of `name`, or NULL.
    void *symbol(const char *name) const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    void *handle_ = nullptr;
};

}  // namespace pagoda
