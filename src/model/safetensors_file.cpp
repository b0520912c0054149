#include "model/safetensors_file.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "model/llama_tensors.hpp"

namespace pagoda::model {

namespace {

using nlohmann::json;

[[noreturn]] void fail(pagoda_status_t status, const std::string &file, const std::string &what) {
    throw Error(status, file + ": " + what);
}

struct Dtype {
    TensorType type;
    uint64_t size;
};

// Safetensors names dtypes "F32", "BF16", ...; these are the ones Pagoda loads.
bool supported_dtype(const std::string &name, Dtype *out) {
    static const struct {
        const char *name;
        Dtype dtype;
    } table[] = {{"F32", {TensorType::F32, 4}},
                 {"F16", {TensorType::F16, 2}},
                 {"BF16", {TensorType::BF16, 2}},
                 {"I32", {TensorType::I32, 4}},
                 {"I64", {TensorType::I64, 8}}};
    for (const auto &entry : table) {
        if (name == entry.name) {
            *out = entry.dtype;
            return true;
        }
    }
    return false;
}

// Valid safetensors dtypes Pagoda does not load; anything else is not a safetensors dtype at all.
bool known_dtype(const std::string &name) {
    static const char *const names[] = {"BOOL",    "U8",      "I8",      "I16",     "U16",
                                        "U32",     "U64",     "F64",     "F8_E4M3", "F8_E5M2",
                                        "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",      "C64"};
    return std::any_of(std::begin(names), std::end(names),
                       [&](const char *n) { return name == n; });
}

// An unsigned JSON integer, or FORMAT naming the tensor and field.
uint64_t unsigned_value(const json &value, const std::string &file, const std::string &tensor,
                        const char *field) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer())  // a negative integer
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + tensor + "': " + field + " holds " +
                 std::to_string(value.get<int64_t>()) + ", expected a non-negative integer");
    fail(PAGODA_ERR_FORMAT, file,
         "tensor '" + tensor + "': " + field + " holds " + json_type_phrase(value) +
             ", expected a non-negative integer");
}

const json &field_of(const json &entry, const char *field, json::value_t type, const char *expected,
                     const std::string &file, const std::string &tensor) {
    auto it = entry.find(field);
    if (it == entry.end())
        fail(PAGODA_ERR_FORMAT, file, "tensor '" + tensor + "' has no \"" + field + "\"");
    if (it->type() != type)
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + tensor + "': \"" + field + "\" is " + json_type_phrase(*it) +
                 ", expected " + expected);
    return *it;
}

// Offsets in the entry are relative to the data section, which starts after the header.
TensorRef parse_entry(const std::string &name, const json &entry, const unsigned char *data_begin,
                      uint64_t data_size, const std::string &file) {
    if (name.empty()) fail(PAGODA_ERR_FORMAT, file, "a tensor has an empty name");
    if (!entry.is_object())
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + name + "' is " + json_type_phrase(entry) + ", expected an object");

    const auto &dtype_name = field_of(entry, "dtype", json::value_t::string, "a string", file, name)
                                 .get_ref<const std::string &>();
    Dtype dtype{};
    if (!supported_dtype(dtype_name, &dtype)) {
        const std::string why = known_dtype(dtype_name) ? "which Pagoda does not load"
                                                        : "which is not a safetensors dtype";
        fail(PAGODA_ERR_UNSUPPORTED, file,
             "tensor '" + name + "' has dtype " + dtype_name + ", " + why +
                 " (supported: F32, F16, BF16, I32, I64)");
    }

    const json &shape = field_of(entry, "shape", json::value_t::array, "an array", file, name);
    TensorRef ref;
    ref.name = name;
    ref.type = dtype.type;
    ref.file = file;
    uint64_t elements = 1;
    bool overflow = false;
    for (const json &dim : shape) {
        const uint64_t d = unsigned_value(dim, file, name, "shape");
        if (d > uint64_t(std::numeric_limits<int64_t>::max()))
            fail(PAGODA_ERR_FORMAT, file,
                 "tensor '" + name + "': dimension " + std::to_string(d) + " is too large");
        ref.shape.push_back(int64_t(d));
        overflow |= __builtin_mul_overflow(elements, d, &elements);
    }
    uint64_t bytes = 0;
    overflow |= __builtin_mul_overflow(elements, dtype.size, &bytes);

    const json &offsets =
        field_of(entry, "data_offsets", json::value_t::array, "an array", file, name);
    if (offsets.size() != 2)
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + name + "': data_offsets has " + std::to_string(offsets.size()) +
                 " elements, expected [begin, end]");
    const uint64_t begin = unsigned_value(offsets[0], file, name, "data_offsets");
    const uint64_t end = unsigned_value(offsets[1], file, name, "data_offsets");
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
    if (begin > end)
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + name + "': data_offsets " + range + " end before they begin");
    if (end > data_size)
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + name + "': data_offsets " + range + " run past the data section of " +
                 std::to_string(data_size) + " bytes");
    if (overflow || bytes != end - begin)
        fail(PAGODA_ERR_FORMAT, file,
             "tensor '" + name + "': shape " + shape_string(ref.shape) + " of " + dtype_name +
                 " needs " + (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
                 " bytes, but data_offsets " + range + " hold " + std::to_string(end - begin));
    ref.data = data_begin + begin;
    ref.bytes = bytes;
    return ref;
}

std::map<std::string, std::string> parse_metadata(const json &value, const std::string &file) {
    if (!value.is_object())
        fail(PAGODA_ERR_FORMAT, file,
             std::string("__metadata__ is ") + json_type_phrase(value) +
                 ", expected an object of strings");
    std::map<std::string, std::string> metadata;
    for (const auto &[key, v] : value.items()) {
        if (!v.is_string())
            fail(
                PAGODA_ERR_FORMAT, file,
                "__metadata__ key '" + key + "' is " + json_type_phrase(v) + ", expected a string");
        metadata[key] = v.get<std::string>();
    }
    return metadata;
}

}  // namespace

SafetensorsContents parse_safetensors(const unsigned char *data, uint64_t size,
                                      const std::string &file) {
    if (size < 8)
        fail(PAGODA_ERR_FORMAT, file,
             "truncated: " + std::to_string(size) +
                 " bytes, but a safetensors file starts with an 8-byte "
                 "header length");
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | data[i];  // little-endian
    if (header_size > size - 8)
        fail(PAGODA_ERR_FORMAT, file,
             "header length " + std::to_string(header_size) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes)");
    if (header_size > kMaxSafetensorsHeader)
        fail(PAGODA_ERR_FORMAT, file,
             "header length " + std::to_string(header_size) + " is over the limit of " +
                 std::to_string(kMaxSafetensorsHeader) + " bytes");

    const std::string_view text(reinterpret_cast<const char *>(data + 8), size_t(header_size));
    const json header = parse_json_text(text, file + ": the header", 8);
    if (!header.is_object())
        fail(PAGODA_ERR_FORMAT, file,
             std::string("the header is ") + json_type_phrase(header) + ", expected an object");

    const unsigned char *data_begin = data + 8 + header_size;
    const uint64_t data_size = size - 8 - header_size;
    SafetensorsContents contents;
    for (const auto &[name, entry] : header.items()) {
        if (name == "__metadata__")
            contents.metadata = parse_metadata(entry, file);
        else
            contents.tensors.push_back(parse_entry(name, entry, data_begin, data_size, file));
    }

    // Two tensors sharing bytes would make writes through one show in the other; the format
    // forbids it. Empty tensors occupy nothing and cannot overlap.
    std::sort(contents.tensors.begin(), contents.tensors.end(),
              [](const TensorRef &a, const TensorRef &b) {
                  return a.data != b.data ? a.data < b.data : a.bytes < b.bytes;
              });
    const TensorRef *furthest = nullptr;  // the non-empty tensor reaching furthest so far
    for (const TensorRef &t : contents.tensors) {
        if (t.bytes == 0) continue;
        const auto *begin = static_cast<const unsigned char *>(t.data);
        if (furthest != nullptr) {
            const auto *furthest_end =
                static_cast<const unsigned char *>(furthest->data) + furthest->bytes;
            if (begin < furthest_end)
                fail(PAGODA_ERR_FORMAT, file,
                     "tensors '" + furthest->name + "' and '" + t.name +
                         "' overlap at data offset " + std::to_string(begin - data_begin));
        }
        furthest = &t;  // sorted by start, so a tensor that does not overlap reaches further
    }
    return contents;
}

SafetensorsFile::SafetensorsFile(const std::string &path) : file_(path) {
    contents_ = parse_safetensors(file_.data(), file_.size(), path);
}

}  // namespace pagoda::model
