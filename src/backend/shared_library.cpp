#include "backend/shared_library.hpp"

#include <dlfcn.h>

namespace pagoda {

SharedLibrary::~SharedLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
}

SharedLibrary &SharedLibrary::operator=(SharedLibrary &&other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) dlclose(handle_);
        handle_ = other.handle_;
        other.handle_ = nullptr;
    }
    return *this;
}

SharedLibrary SharedLibrary::open(const std::string &path, std::string &error) {
    dlerror();  // clear a stale message
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *e = dlerror();
        error = e ? e : "dlopen failed";
    }
    return SharedLibrary(h);
}

void *SharedLibrary::symbol(const char *name) const {
    return handle_ ? dlsym(handle_, name) : nullptr;
}

}  // namespace pagoda
