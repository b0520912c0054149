#include "model/gguf_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace pagoda::model {

namespace {

constexpr uint32_t kGgufVersion = 3;

template <typename T>
void append(std::vector<unsigned char> &out, T v) {
    const auto *p = reinterpret_cast<const unsigned char *>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

void append_string(std::vector<unsigned char> &out, std::string_view s) {
    append<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void append_array_head(std::vector<unsigned char> &out, GgufType element, size_t n) {
    append<uint32_t>(out, uint32_t(element));
    append<uint64_t>(out, n);
}

}  // namespace

GgufMetadata::Entry &GgufMetadata::slot(std::string_view key, GgufType type) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry &e) { return e.key == key; });
    if (it == entries_.end()) {
        entries_.push_back(Entry{std::string(key), type, {}});
        return entries_.back();
    }
    it->type = type;
    it->bytes.clear();
    return *it;
}

void GgufMetadata::set_string(std::string_view key, std::string_view value) {
    append_string(slot(key, GgufType::String).bytes, value);
}

void GgufMetadata::set_u32(std::string_view key, uint32_t value) { append(slot(key, GgufType::U32).bytes, value); }

void GgufMetadata::set_f32(std::string_view key, float value) { append(slot(key, GgufType::F32).bytes, value); }

void GgufMetadata::set_bool(std::string_view key, bool value) {
    append<uint8_t>(slot(key, GgufType::Bool).bytes, value ? 1 : 0);
}

void GgufMetadata::set_string_array(std::string_view key, const std::vector<std::string> &values) {
    std::vector<unsigned char> &b = slot(key, GgufType::Array).bytes;
    append_array_head(b, GgufType::String, values.size());
    for (const std::string &s : values) append_string(b, s);
}

void GgufMetadata::set_f32_array(std::string_view key, const std::vector<float> &values) {
    std::vector<unsigned char> &b = slot(key, GgufType::Array).bytes;
    append_array_head(b, GgufType::F32, values.size());
    for (float v : values) append(b, v);
}

void GgufMetadata::set_i32_array(std::string_view key, const std::vector<int32_t> &values) {
    std::vector<unsigned char> &b = slot(key, GgufType::Array).bytes;
    append_array_head(b, GgufType::I32, values.size());
    for (int32_t v : values) append(b, v);
}

void GgufMetadata::set_encoded(std::string_view key, const GgufValue &value) {
    slot(key, value.type).bytes.assign(value.bytes.begin(), value.bytes.end());
}

void GgufMetadata::erase(std::string_view key) {
    std::erase_if(entries_, [&](const Entry &e) { return e.key == key; });
}

const GgufMetadata::Entry *GgufMetadata::find(std::string_view key) const {
    for (const Entry &e : entries_)
        if (e.key == key) return &e;
    return nullptr;
}

GgufOutputFile::GgufOutputFile(const std::string &path) : path_(path), partial_(path + ".partial") {
    file_ = std::fopen(partial_.c_str(), "wb");
    if (file_ == nullptr) throw Error(PAGODA_ERR_IO, partial_ + ": cannot create: " + std::strerror(errno));
}

GgufOutputFile::~GgufOutputFile() {
    if (file_ != nullptr) {
        std::fclose(file_);
        std::remove(partial_.c_str());
    }
}

void GgufOutputFile::write(const void *data, size_t n) {
    if (n > 0 && std::fwrite(data, 1, n, file_) != n)
        throw Error(PAGODA_ERR_IO, partial_ + ": write failed: " + std::strerror(errno));
    written_ += n;
}

void GgufOutputFile::put_string(std::string_view s) {
    put<uint64_t>(s.size());
    write(s.data(), s.size());
}

void GgufOutputFile::pad_to(uint64_t alignment) {
    static const unsigned char zeros[64] = {};
    while (written_ % alignment != 0)
        write(zeros, size_t(std::min<uint64_t>(sizeof zeros, alignment - written_ % alignment)));
}

void GgufOutputFile::write_header(uint64_t n_tensors, const GgufMetadata &metadata) {
    write("GGUF", 4);
    put<uint32_t>(kGgufVersion);
    put<uint64_t>(n_tensors);
    put<uint64_t>(metadata.entries().size());
    for (const GgufMetadata::Entry &e : metadata.entries()) {
        put_string(e.key);
        put<uint32_t>(uint32_t(e.type));
        write(e.bytes.data(), e.bytes.size());
    }
}

void GgufOutputFile::write_tensor_info(std::string_view name, const std::vector<uint64_t> &dims,
                                       uint32_t ggml_type, uint64_t offset) {
    put_string(name);
    put<uint32_t>(uint32_t(dims.size()));
    for (uint64_t d : dims) put<uint64_t>(d);
    put<uint32_t>(ggml_type);
    put<uint64_t>(offset);
}

void GgufOutputFile::commit() {
    const bool flushed = std::fflush(file_) == 0;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!flushed || !closed) {
        std::remove(partial_.c_str());
        throw Error(PAGODA_ERR_IO, partial_ + ": write failed: " + std::strerror(errno));
    }
    if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        std::remove(partial_.c_str());
        throw Error(PAGODA_ERR_IO, path_ + ": cannot rename the finished file into place: " + std::strerror(err));
    }
}

}  // namespace pagoda::model
