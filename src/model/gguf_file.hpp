// A GGUF file (versions 2 and 3), mapped and checked: its metadata key/values and its tensor
// directory. Tensor bytes stay in the mapping; nothing is copied. Every check a hostile file could
// defeat (lengths, counts, ranges, overlaps) runs when the file is opened, so a GgufFile that
// exists is safe to read anywhere its tensors say.
//
// Format (little-endian): "GGUF", u32 version, u64 tensor count, u64 key/value count, the
// key/values, the tensor infos, padding to `general.alignment` (default 32), then the data section
// that tensor offsets count from.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mapped_file.hpp"
#include "pagoda/status.h"
#include "model/tensor_table.hpp"

namespace pagoda::model {

// A metadata value's type tag, as the file stores it.
enum class GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
    String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u32", "string", "array", ...
const char *gguf_type_name(GgufType t);

// ggml's type id of `t` (what a GGUF tensor info stores).
uint32_t ggml_type_id(TensorType t);

// One metadata value, still encoded: `bytes` points into the mapping, after the type tag. Arrays
// are decoded only when asked for, so a file's long vocabulary costs nothing until it is used.
struct GgufValue {
    GgufType type = GgufType::U8;
    GgufType element_type = GgufType::U8;  // arrays only
    uint64_t count = 0;                     // arrays only: number of elements
    std::span<const unsigned char> bytes;   // the whole encoded value
};

// One entry of the tensor directory.
struct GgufTensor {
    std::string name;             // as the file names it: "blk.0.attn_q.weight"
    uint32_t ggml_type = 0;       // the file's type id
    TensorType type = TensorType::F32;
    std::vector<uint64_t> dims;   // innermost first, as GGUF stores them (1 to 4 of them)
    uint64_t offset = 0;          // from the start of the data section
    uint64_t bytes = 0;
    const unsigned char *data = nullptr;  // in the mapping
};

class GgufFile {
public:
    // Maps and checks `path`. Throws Error: NOT_FOUND / IO from opening, FORMAT for malformed
    // content, UNSUPPORTED for a well-formed file this reader cannot use (version, tensor type).
    // Every message begins with the path.
    explicit GgufFile(const std::string &path);

    const std::string &path() const noexcept { return file_.path(); }
    const MappedFile &mapping() const noexcept { return file_; }
    uint32_t version() const noexcept { return version_; }
    uint64_t alignment() const noexcept { return alignment_; }
    uint64_t data_offset() const noexcept { return data_offset_; }

    // In file order.
    const std::vector<GgufTensor> &tensors() const noexcept { return tensors_; }
    // NULL when absent.
    const GgufTensor *find_tensor(std::string_view name) const;

    const std::map<std::string, GgufValue, std::less<>> &metadata() const noexcept {
        return metadata_;
    }
    // NULL when absent.
    const GgufValue *find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    // Typed reads. A missing key throws FORMAT naming it; a value of another type throws FORMAT
    // naming the key, the type wanted and the type found. Integer reads take any integer type
    // whose value fits, since writers differ in the width they pick.
    std::string get_string(std::string_view key) const;
    uint32_t get_u32(std::string_view key) const;
    float get_f32(std::string_view key) const;  // also takes f64
    bool get_bool(std::string_view key) const;
    std::vector<std::string> get_string_array(std::string_view key) const;
    std::vector<float> get_f32_array(std::string_view key) const;
    std::vector<int32_t> get_i32_array(std::string_view key) const;
    // Elements of an array value (any element type).
    uint64_t get_array_length(std::string_view key) const;
    // Elements of an array of strings (without decoding them).
    uint64_t get_string_array_length(std::string_view key) const;

private:
    void parse();
    const GgufValue &require(std::string_view key) const;
    const GgufValue &require_array(std::string_view key, GgufType element, const char *wanted) const;
    [[noreturn]] void raise(pagoda_status_t status, const std::string &what) const;

    MappedFile file_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::map<std::string, GgufValue, std::less<>> metadata_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace pagoda::model
