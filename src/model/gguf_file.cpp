#include "model/gguf_file.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "common/error.hpp"
#include "model/quant_blocks.hpp"

namespace pagoda::model {

namespace {

// Arrays of arrays are legal but no real file goes deeper than one level; the limit keeps a
// hostile file from recursing until the stack overflows.
constexpr int kMaxArrayDepth = 4;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;

// ggml's type ids, by the names ggml gives them; holes are ids ggml has retired. Knowing the
// names lets us tell "a real type we cannot load" (UNSUPPORTED) from "garbage" (FORMAT).
constexpr const char *kGgmlTypeNames[] = {
    "F32",     "F16",    "Q4_0",   "Q4_1",    nullptr,  nullptr, "Q5_0",   "Q5_1",
    "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",    "Q4_K",   "Q5_K",  "Q6_K",   "Q8_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S", "IQ2_S",  "IQ4_XS",
    "I8",      "I16",    "I32",    "I64",     "F64",    "IQ1_M", "BF16",   nullptr,
    nullptr,   nullptr,  "TQ1_0",  "TQ2_0",   nullptr,  nullptr, nullptr,  "MXFP4",
};
constexpr uint32_t kGgmlTypeCount = sizeof(kGgmlTypeNames) / sizeof(kGgmlTypeNames[0]);

// ggml's ids of the types Pagoda reads.
constexpr std::pair<uint32_t, TensorType> kGgmlIds[] = {
    {0, TensorType::F32},   {1, TensorType::F16},   {2, TensorType::Q4_0},  {8, TensorType::Q8_0},
    {12, TensorType::Q4_K}, {13, TensorType::Q5_K}, {14, TensorType::Q6_K}, {26, TensorType::I32},
    {27, TensorType::I64},  {30, TensorType::BF16},
};

bool supported_ggml_type(uint32_t id, TensorType *out) {
    for (const auto &[ggml, type] : kGgmlIds)
        if (ggml == id) {
            *out = type;
            return true;
        }
    return false;
}

// Bytes of one scalar of `t`; 0 for strings and arrays, whose size depends on their content.
uint64_t scalar_size(GgufType t) {
    switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: case GgufType::Array: return 0;
    }
    return 0;
}

bool valid_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

bool is_integer(GgufType t) {
    switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
    }
}

template <typename T>
T load(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);  // unaligned-safe; GGUF is little-endian, as are our targets
    return v;
}

// Reads an integer of type `t` at `p`; false when it lies outside [lo, hi].
bool load_integer(GgufType t, const unsigned char *p, int64_t lo, int64_t hi, int64_t *out) {
    uint64_t u = 0;
    int64_t s = 0;
    bool is_signed = true;
    switch (t) {
    case GgufType::U8: u = load<uint8_t>(p); is_signed = false; break;
    case GgufType::U16: u = load<uint16_t>(p); is_signed = false; break;
    case GgufType::U32: u = load<uint32_t>(p); is_signed = false; break;
    case GgufType::U64: u = load<uint64_t>(p); is_signed = false; break;
    case GgufType::I8: s = load<int8_t>(p); break;
    case GgufType::I16: s = load<int16_t>(p); break;
    case GgufType::I32: s = load<int32_t>(p); break;
    case GgufType::I64: s = load<int64_t>(p); break;
    default: return false;
    }
    if (!is_signed) {
        if (u > uint64_t(INT64_MAX)) return false;
        s = int64_t(u);
    }
    if (s < lo || s > hi) return false;
    *out = s;
    return true;
}

std::string integer_text(GgufType t, const unsigned char *p) {
    switch (t) {
    case GgufType::U8: return std::to_string(load<uint8_t>(p));
    case GgufType::U16: return std::to_string(load<uint16_t>(p));
    case GgufType::U32: return std::to_string(load<uint32_t>(p));
    case GgufType::U64: return std::to_string(load<uint64_t>(p));
    case GgufType::I8: return std::to_string(load<int8_t>(p));
    case GgufType::I16: return std::to_string(load<int16_t>(p));
    case GgufType::I32: return std::to_string(load<int32_t>(p));
    case GgufType::I64: return std::to_string(load<int64_t>(p));
    default: return "?";
    }
}

// Reads forward through mapped bytes; every read checks what is left first, and a short read
// names the file, the offset and what was being read.
class Cursor {
public:
    Cursor(const unsigned char *data, uint64_t size, const std::string &path)
        : data_(data), size_(size), path_(path) {}

    const std::string &path() const { return path_; }
    uint64_t position() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    const unsigned char *here() const { return data_ + pos_; }

    void need(uint64_t n, std::string_view what) const {
        if (n > remaining())
            throw Error(PAGODA_ERR_FORMAT,
                        path_ + ": truncated: " + std::string(what) + " at byte " +
                            std::to_string(pos_) + " needs " + std::to_string(n) +
                            " bytes, but the file has only " + std::to_string(remaining()) +
                            " left");
    }
    void skip(uint64_t n, std::string_view what) {
        need(n, what);
        pos_ += n;
    }
    template <typename T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v = load<T>(here());
        pos_ += sizeof(T);
        return v;
    }
    std::string_view read_string(std::string_view what) {
        const uint64_t n = read<uint64_t>(what);
        need(n, what);
        std::string_view s(reinterpret_cast<const char *>(here()), size_t(n));
        pos_ += n;
        return s;
    }

private:
    const unsigned char *data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string &path_;
};

// Steps over one encoded value of `type` (`what` names it: "key 'x'"), checking it as it goes.
// Counts are bounded by the bytes left before anything loops, so a count of 2^60 fails at once.
void skip_value(Cursor &c, GgufType type, const std::string &what, int depth) {
    switch (type) {
    case GgufType::String: c.read_string(what); return;
    case GgufType::Array: {
        const uint32_t element = c.read<uint32_t>(what);
        const uint64_t count = c.read<uint64_t>(what);
        if (!valid_type(element))
            throw Error(PAGODA_ERR_FORMAT, c.path() + ": " + what +
                                               " is an array of unknown value type " +
                                               std::to_string(element));
        const GgufType et = GgufType(element);
        if (et == GgufType::Array && depth + 1 >= kMaxArrayDepth)
            throw Error(PAGODA_ERR_FORMAT, c.path() + ": " + what + " nests arrays deeper than " +
                                               std::to_string(kMaxArrayDepth) + " levels");
        // The least bytes one element can take: a string's length, an array's type and count.
        const uint64_t least = scalar_size(et) ? scalar_size(et) : et == GgufType::String ? 8 : 12;
        if (count > c.remaining() / least)
            throw Error(PAGODA_ERR_FORMAT,
                        c.path() + ": " + what + " claims " + std::to_string(count) + " " +
                            gguf_type_name(et) + " elements, more than the " +
                            std::to_string(c.remaining()) + " bytes left in the file can hold");
        if (scalar_size(et) != 0) {
            c.skip(count * least, what);
        } else {
            for (uint64_t i = 0; i < count; ++i) skip_value(c, et, what, depth + 1);
        }
        return;
    }
    default: c.skip(scalar_size(type), what); return;
    }
}

}  // namespace

uint32_t ggml_type_id(TensorType t) {
    for (const auto &[ggml, type] : kGgmlIds)
        if (type == t) return ggml;
    throw Error(PAGODA_ERR_INTERNAL, std::string("ggml_type_id: no ggml id for ") + tensor_type_name(t));
}

const char *gguf_type_name(GgufType t) {
    switch (t) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
    }
    return "unknown";
}

GgufFile::GgufFile(const std::string &path) : file_(path) { parse(); }

void GgufFile::raise(pagoda_status_t status, const std::string &what) const {
    throw Error(status, path() + ": " + what);
}

void GgufFile::parse() {
    Cursor c(file_.data(), file_.size(), path());

    c.need(4, "the magic \"GGUF\"");
    if (std::memcmp(c.here(), "GGUF", 4) != 0) raise(PAGODA_ERR_FORMAT, "not a GGUF file (no \"GGUF\" magic)");
    c.skip(4, "magic");
    version_ = c.read<uint32_t>("the version");
    if (version_ != 2 && version_ != 3) {
        if (version_ == 0x02000000 || version_ == 0x03000000)
            raise(PAGODA_ERR_UNSUPPORTED, "big-endian GGUF is not supported");
        raise(PAGODA_ERR_UNSUPPORTED, "GGUF version " + std::to_string(version_) +
                                         " is not supported (this reader reads versions 2 and 3)");
    }
    const uint64_t tensor_count = c.read<uint64_t>("the tensor count");
    const uint64_t kv_count = c.read<uint64_t>("the metadata count");

    // A key/value takes at least 13 bytes (key length, type, one-byte value); a tensor info at
    // least 24 (name length, n_dims, type, offset). Bounding the counts first keeps a hostile
    // header from making us reserve or loop for counts the file cannot hold.
    if (kv_count > c.remaining() / 13)
        raise(PAGODA_ERR_FORMAT, "header claims " + std::to_string(kv_count) +
                                     " metadata entries, more than the " +
                                     std::to_string(c.remaining()) +
                                     " bytes left can hold (truncated or corrupt)");
    if (tensor_count > c.remaining() / 24)
        raise(PAGODA_ERR_FORMAT, "header claims " + std::to_string(tensor_count) +
                                     " tensors, more than the " + std::to_string(c.remaining()) +
                                     " bytes left can hold (truncated or corrupt)");

    for (uint64_t i = 0; i < kv_count; ++i) {
        const std::string index = "metadata entry " + std::to_string(i);
        const std::string key(c.read_string("the key of " + index));
        const std::string what = "key '" + key + "'";
        const uint32_t type = c.read<uint32_t>("the value type of key '" + key + "'");
        if (!valid_type(type))
            raise(PAGODA_ERR_FORMAT, "key '" + key + "' has unknown value type " + std::to_string(type));
        GgufValue v;
        v.type = GgufType(type);
        const uint64_t start = c.position();
        if (v.type == GgufType::Array) {
            // Peek at the array's header for the accessors; skip_value checks it properly.
            c.need(12, "the array header of key '" + key + "'");
            v.element_type = GgufType(load<uint32_t>(c.here()));
            v.count = load<uint64_t>(c.here() + 4);
        }
        skip_value(c, v.type, what, 0);
        v.bytes = {file_.data() + start, size_t(c.position() - start)};
        if (!metadata_.emplace(key, v).second) raise(PAGODA_ERR_FORMAT, "key '" + key + "' appears twice");
    }

    tensors_.reserve(size_t(tensor_count));
    for (uint64_t i = 0; i < tensor_count; ++i) {
        GgufTensor t;
        t.name = std::string(c.read_string("the name of tensor " + std::to_string(i)));
        const std::string what = "tensor '" + t.name + "'";
        const uint32_t n_dims = c.read<uint32_t>("the dimension count of " + what);
        if (n_dims == 0 || n_dims > kMaxDims)
            raise(PAGODA_ERR_FORMAT, what + " has " + std::to_string(n_dims) +
                                        " dimensions; GGUF allows 1 to 4");
        for (uint32_t d = 0; d < n_dims; ++d) t.dims.push_back(c.read<uint64_t>("the shape of " + what));
        t.ggml_type = c.read<uint32_t>("the type of " + what);
        t.offset = c.read<uint64_t>("the offset of " + what);
        if (!tensor_index_.emplace(t.name, tensors_.size()).second)
            raise(PAGODA_ERR_FORMAT, what + " appears twice");
        tensors_.push_back(std::move(t));
    }

    if (has("general.alignment")) {
        alignment_ = get_u32("general.alignment");
        if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
            raise(PAGODA_ERR_FORMAT, "general.alignment = " + std::to_string(alignment_) +
                                        " is not a power of two");
    } else {
        alignment_ = kDefaultAlignment;
    }
    // The data section starts at the next multiple of the alignment. No overflow: the position is
    // at most the file size and the alignment below 2^32.
    data_offset_ = (c.position() + alignment_ - 1) / alignment_ * alignment_;
    if (tensors_.empty()) return;
    if (data_offset_ > file_.size())
        raise(PAGODA_ERR_FORMAT, "truncated: the data section would start at byte " +
                                    std::to_string(data_offset_) + ", past the end of the file (" +
                                    std::to_string(file_.size()) + " bytes)");
    const uint64_t data_size = file_.size() - data_offset_;

    for (GgufTensor &t : tensors_) {
        const std::string what = "tensor '" + t.name + "'";
        if (!supported_ggml_type(t.ggml_type, &t.type)) {
            const char *name = t.ggml_type < kGgmlTypeCount ? kGgmlTypeNames[t.ggml_type] : nullptr;
            if (name == nullptr)
                raise(PAGODA_ERR_FORMAT, what + " has unknown ggml type id " +
                                            std::to_string(t.ggml_type));
            raise(PAGODA_ERR_UNSUPPORTED, what + " has ggml type " + name + " (" +
                                             std::to_string(t.ggml_type) +
                                             "), which Pagoda cannot load; supported: F32, F16, "
                                             "BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, I32, I64");
        }
        // Element count with overflow checks: shapes are int64 downstream.
        uint64_t elements = 1;
        for (uint64_t d : t.dims) {
            if (d == 0) raise(PAGODA_ERR_FORMAT, what + " has a dimension of 0");
            if (elements > uint64_t(INT64_MAX) / d)
                raise(PAGODA_ERR_FORMAT, what + " has more elements than a 64-bit count holds");
            elements *= d;
        }
        // Block types quantize along rows, so each row must be whole blocks.
        if (const uint64_t block = block_layout(t.type).elements; t.dims[0] % block != 0)
            raise(PAGODA_ERR_FORMAT, what + " is " + tensor_type_name(t.type) + " with rows of " +
                                        std::to_string(t.dims[0]) + " elements, not a multiple of its " +
                                        std::to_string(block) + "-element block");
        t.bytes = tensor_bytes(t.type, elements, path() + ": " + what);
        if (t.offset % alignment_ != 0)
            raise(PAGODA_ERR_FORMAT, what + " starts at data offset " + std::to_string(t.offset) +
                                        ", not a multiple of the alignment " +
                                        std::to_string(alignment_));
        if (t.offset > data_size || t.bytes > data_size - t.offset)
            raise(PAGODA_ERR_FORMAT, what + " spans data bytes [" + std::to_string(t.offset) + ", " +
                                        (t.bytes > UINT64_MAX - t.offset
                                             ? std::string("overflow")
                                             : std::to_string(t.offset + t.bytes)) +
                                        "), outside the data section of " +
                                        std::to_string(data_size) +
                                        " bytes (truncated or corrupt)");
        t.data = file_.data() + data_offset_ + t.offset;
    }

    // Overlapping tensors mean a corrupt directory: writes to one would show in the other.
    std::vector<size_t> order(tensors_.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t i = 1; i < order.size(); ++i) {
        const GgufTensor &prev = tensors_[order[i - 1]];
        const GgufTensor &next = tensors_[order[i]];
        if (prev.offset + prev.bytes > next.offset)  // in range: both lie inside the data
            raise(PAGODA_ERR_FORMAT, "tensors '" + prev.name + "' [" + std::to_string(prev.offset) +
                                        ", " + std::to_string(prev.offset + prev.bytes) + ") and '" +
                                        next.name + "' [" + std::to_string(next.offset) + ", " +
                                        std::to_string(next.offset + next.bytes) + ") overlap");
    }
}

const GgufTensor *GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue *GgufFile::find(std::string_view key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

const GgufValue &GgufFile::require(std::string_view key) const {
    const GgufValue *v = find(key);
    if (v == nullptr) raise(PAGODA_ERR_FORMAT, "missing required key '" + std::string(key) + "'");
    return *v;
}

namespace {

std::string describe_type(const GgufValue &v) {
    if (v.type != GgufType::Array) return gguf_type_name(v.type);
    return std::string("array of ") + gguf_type_name(v.element_type);
}

}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
    const GgufValue &v = require(key);
    if (v.type != GgufType::String)
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be a string but is " +
                                    describe_type(v));
    // Checked at open: the length fits in the value's bytes.
    return std::string(reinterpret_cast<const char *>(v.bytes.data() + 8), v.bytes.size() - 8);
}

uint32_t GgufFile::get_u32(std::string_view key) const {
    const GgufValue &v = require(key);
    if (!is_integer(v.type))
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be a u32 but is " +
                                    describe_type(v));
    int64_t out = 0;
    if (!load_integer(v.type, v.bytes.data(), 0, UINT32_MAX, &out))
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' = " +
                                    integer_text(v.type, v.bytes.data()) + " does not fit in a u32");
    return uint32_t(out);
}

float GgufFile::get_f32(std::string_view key) const {
    const GgufValue &v = require(key);
    if (v.type == GgufType::F32) return load<float>(v.bytes.data());
    if (v.type == GgufType::F64) return float(load<double>(v.bytes.data()));
    raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be an f32 but is " +
                                describe_type(v));
}

bool GgufFile::get_bool(std::string_view key) const {
    const GgufValue &v = require(key);
    if (v.type != GgufType::Bool)
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be a bool but is " +
                                    describe_type(v));
    return v.bytes[0] != 0;
}

uint64_t GgufFile::get_string_array_length(std::string_view key) const {
    return require_array(key, GgufType::String, "array of string").count;
}

uint64_t GgufFile::get_array_length(std::string_view key) const {
    const GgufValue &v = require(key);
    if (v.type != GgufType::Array)
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be an array but is " +
                                    describe_type(v));
    return v.count;
}

const GgufValue &GgufFile::require_array(std::string_view key, GgufType element,
                                         const char *wanted) const {
    const GgufValue &v = require(key);
    bool ok = v.type == GgufType::Array &&
              (v.element_type == element || (element == GgufType::I32 && is_integer(v.element_type)));
    if (!ok)
        raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' should be an " + wanted +
                                    " but is " + describe_type(v));
    return v;
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue &v = require_array(key, GgufType::String, "array of string");
    // Lengths were checked at open; the cursor checks them again for free.
    Cursor c(v.bytes.data(), v.bytes.size(), path());
    c.skip(12, "array header");
    std::vector<std::string> out;
    out.reserve(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) out.emplace_back(c.read_string(key));
    return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
    const GgufValue &v = require_array(key, GgufType::F32, "array of f32");
    std::vector<float> out(size_t(v.count));
    if (!out.empty()) std::memcpy(out.data(), v.bytes.data() + 12, out.size() * sizeof(float));
    return out;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
    const GgufValue &v = require_array(key, GgufType::I32, "array of i32");
    const uint64_t size = scalar_size(v.element_type);
    std::vector<int32_t> out(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) {
        const unsigned char *p = v.bytes.data() + 12 + i * size;
        int64_t x = 0;
        if (!load_integer(v.element_type, p, INT32_MIN, INT32_MAX, &x))
            raise(PAGODA_ERR_FORMAT, "key '" + std::string(key) + "' element " + std::to_string(i) +
                                        " = " + integer_text(v.element_type, p) +
                                        " does not fit in an i32");
        out[size_t(i)] = int32_t(x);
    }
    return out;
}

}  // namespace pagoda::model
