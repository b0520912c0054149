// The weights of an opened model: each tensor's canonical name, type, shape and bytes, pointing
// into memory the loader keeps mapped. Canonical names are Hugging Face's
// ("model.layers.3.self_attn.q_proj.weight"); the GGUF loader translates its own names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pagoda::model {

// Types weights come in. Quantized block types (Q8_0: 32 int8 values and one f16 scale; the
// K types: 256 values in sub-blocks with their own scales; quant_blocks.hpp) have no size per
// element; tensor_bytes() says what a tensor of them takes.
enum class TensorType { F32, F16, BF16, Q8_0, I32, I64, Q4_0, Q4_K, Q5_K, Q6_K };

const char *tensor_type_name(TensorType t);

// Bytes of a tensor of `elements` values of type `t`; throws Error(PAGODA_ERR_FORMAT) when a
// block type's element count is not a multiple of its block.
uint64_t tensor_bytes(TensorType t, uint64_t elements, const std::string &what);

struct TensorRef {
    std::string name;            // canonical
    TensorType type = TensorType::F32;
    std::vector<int64_t> shape;  // outermost first: a [out, in] weight is {out, in}
    const void *data = nullptr;  // in mapped file memory, aligned as the file aligned it
    uint64_t bytes = 0;
    std::string file;            // where it came from, for messages
};

// Tensors by canonical name.
class TensorTable {
public:
    // Throws Error(PAGODA_ERR_FORMAT) for a name seen twice.
    void add(TensorRef tensor);
    // NULL when absent.
    const TensorRef *find(const std::string &name) const;
    // Throws Error(PAGODA_ERR_NOT_FOUND) naming the tensor and `source` when absent.
    const TensorRef &require(const std::string &name, const std::string &source) const;
    const std::map<std::string, TensorRef> &all() const noexcept { return tensors_; }

private:
    std::map<std::string, TensorRef> tensors_;
};

}  // namespace pagoda::model
