#include "common/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace pagoda {

MappedFile::MappedFile(const std::string &path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        throw Error(e == ENOENT ? PAGODA_ERR_NOT_FOUND : PAGODA_ERR_IO,
                    path + ": cannot open: " + std::strerror(e));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int e = errno;
        ::close(fd);
        throw Error(PAGODA_ERR_IO, path + (S_ISDIR(st.st_mode) ? ": is a folder, not a file"
                                                               : ": cannot stat: " +
                                                                     std::string(std::strerror(e))));
    }
    size_ = uint64_t(st.st_size);
    if (size_ > 0) {
        void *p = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            throw Error(PAGODA_ERR_IO, path + ": cannot map " + std::to_string(size_) +
                                           " bytes: " + std::strerror(e));
        }
        data_ = static_cast<const unsigned char *>(p);
    }
    ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile &&other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
    other.data_ = nullptr;
    other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
    if (this != &other) {
        release();
        data_ = other.data_;
        size_ = other.size_;
        path_ = std::move(other.path_);
        other.data_ = nullptr;
        other.size_ = 0;
    }
    return *this;
}

void MappedFile::release() noexcept {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char *>(data_), size_t(size_));
    data_ = nullptr;
    size_ = 0;
}

}  // namespace pagoda
