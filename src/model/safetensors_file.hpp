// One .safetensors file, mapped and checked: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {string: string}}, then the
// tensors' bytes. Tensors point into the mapping; nothing is copied.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/mapped_file.hpp"
#include "model/tensor_table.hpp"

namespace pagoda::model {

// The parsed header of a safetensors image; `tensors` point into the bytes that were parsed,
// sorted by their offset in the file.
struct SafetensorsContents {
    std::vector<TensorRef> tensors;
    std::map<std::string, std::string> metadata;
};

// A header larger than this is refused before it is parsed (real ones are well under 10 MiB).
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

// Parses `size` bytes at `data`, naming `file` in messages. Throws Error: FORMAT (truncated file,
// header length past the end, bad JSON, a missing or mistyped field, shape and byte range that
// disagree, a range outside the data, overlapping tensors), UNSUPPORTED (a dtype other than F32,
// F16, BF16, I32, I64). Every message names the file and, where there is one, the tensor.
SafetensorsContents parse_safetensors(const unsigned char *data, uint64_t size,
                                      const std::string &file);

class SafetensorsFile {
public:
    // Maps and parses `path`; throws as MappedFile and parse_safetensors do.
    explicit SafetensorsFile(const std::string &path);

    const std::string &path() const noexcept { return file_.path(); }
    const MappedFile &mapping() const noexcept { return file_; }
    const std::vector<TensorRef> &tensors() const noexcept { return contents_.tensors; }
    const std::map<std::string, std::string> &metadata() const noexcept {
        return contents_.metadata;
    }

private:
    MappedFile file_;  // the tensors point into it; moving a mapping does not move its memory
    SafetensorsContents contents_;
};

}  // namespace pagoda::model
