// A file mapped read-only into memory: weights are used where they lie, never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pagoda {

class MappedFile {
public:
    MappedFile() = default;
    // Maps all of `path`. Throws Error: NOT_FOUND (no such file), IO (cannot open or map).
    explicit MappedFile(const std::string &path);
    ~MappedFile();
    MappedFile(MappedFile &&other) noexcept;
    MappedFile &operator=(MappedFile &&other) noexcept;
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;

    const unsigned char *data() const noexcept { return data_; }
    uint64_t size() const noexcept { return size_; }
    const std::string &path() const noexcept { return path_; }

private:
    void release() noexcept;

    const unsigned char *data_ = nullptr;
    uint64_t size_ = 0;
    std::string path_;
};

}  // namespace pagoda
