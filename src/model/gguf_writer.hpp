// Writing GGUF files (version 3): metadata key/values encoded as the reader (gguf_file.hpp) reads
// them, and an output file that appears whole under its final name or not at all.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf_file.hpp"

namespace pagoda::model {

// Metadata key/values in the order they are set, each value already encoded (what follows the
// type tag in the file). Setting a key again replaces its value in place.
class GgufMetadata {
public:
    struct Entry {
        std::string key;
        GgufType type = GgufType::U8;
        std::vector<unsigned char> bytes;
    };

    void set_string(std::string_view key, std::string_view value);
    void set_u32(std::string_view key, uint32_t value);
    void set_f32(std::string_view key, float value);
    void set_bool(std::string_view key, bool value);
    void set_string_array(std::string_view key, const std::vector<std::string> &values);
    void set_f32_array(std::string_view key, const std::vector<float> &values);
    void set_i32_array(std::string_view key, const std::vector<int32_t> &values);
    // A value as another file holds it (copied).
    void set_encoded(std::string_view key, const GgufValue &value);

    void erase(std::string_view key);
    bool has(std::string_view key) const { return find(key) != nullptr; }
    const Entry *find(std::string_view key) const;
    const std::vector<Entry> &entries() const noexcept { return entries_; }

private:
    Entry &slot(std::string_view key, GgufType type);
    std::vector<Entry> entries_;
};

// The output file, written beside its final name ("<path>.partial") and renamed into place by
// commit(); destroyed uncommitted (an error, a cancel), it removes the partial file.
class GgufOutputFile {
public:
    // Throws Error(PAGODA_ERR_IO) naming the partial file when it cannot be created.
    explicit GgufOutputFile(const std::string &path);
    ~GgufOutputFile();
    GgufOutputFile(const GgufOutputFile &) = delete;
    GgufOutputFile &operator=(const GgufOutputFile &) = delete;

    // Throws Error(PAGODA_ERR_IO) naming the partial file.
    void write(const void *data, size_t n);
    template <typename T>
    void put(T v) { write(&v, sizeof v); }
    void put_string(std::string_view s);
    void pad_to(uint64_t alignment);
    uint64_t written() const noexcept { return written_; }

    // "GGUF", the version, the counts and every key/value.
    void write_header(uint64_t n_tensors, const GgufMetadata &metadata);
    // One tensor info: name, dims (innermost first), ggml type, offset in the data section.
    void write_tensor_info(std::string_view name, const std::vector<uint64_t> &dims, uint32_t ggml_type,
                           uint64_t offset);

    // Flushes, closes and renames into place. Throws Error(PAGODA_ERR_IO) naming the file.
    void commit();

private:
    std::string path_, partial_;
    std::FILE *file_ = nullptr;
    uint64_t written_ = 0;
};

}  // namespace pagoda::model
