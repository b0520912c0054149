#include "model/tensor_table.hpp"

#include <utility>

#include "common/error.hpp"
#include "model/quant_blocks.hpp"

namespace pagoda::model {

const char *tensor_type_name(TensorType t) {
    switch (t) {
    case TensorType::F32: return "F32";
    case TensorType::F16: return "F16";
    case TensorType::BF16: return "BF16";
    case TensorType::Q4_0: return "Q4_0";
    case TensorType::Q8_0: return "Q8_0";
    case TensorType::Q4_K: return "Q4_K";
    case TensorType::Q5_K: return "Q5_K";
    case TensorType::Q6_K: return "Q6_K";
    case TensorType::I32: return "I32";
    case TensorType::I64: return "I64";
    }
    return "unknown";
}

uint64_t tensor_bytes(TensorType t, uint64_t elements, const std::string &what) {
    const BlockLayout b = block_layout(t);
    if (elements % b.elements != 0)
        throw Error(PAGODA_ERR_FORMAT, what + ": " + std::to_string(elements) + " elements of " +
                                           tensor_type_name(t) + " is not a whole number of " +
                                           std::to_string(b.elements) + "-element blocks");
    const uint64_t blocks = elements / b.elements;
    // Sizes come from files: a hostile shape must not wrap around to a small byte count.
    if (blocks > UINT64_MAX / b.bytes)
        throw Error(PAGODA_ERR_FORMAT, what + ": " + std::to_string(elements) + " elements of " +
                                           tensor_type_name(t) + " overflow a 64-bit byte count");
    return blocks * b.bytes;
}

void TensorTable::add(TensorRef tensor) {
    auto [it, inserted] = tensors_.try_emplace(tensor.name);
    if (!inserted)
        throw Error(PAGODA_ERR_FORMAT, tensor.file + ": tensor '" + tensor.name + "' appears twice");
    it->second = std::move(tensor);
}

const TensorRef *TensorTable::find(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorRef &TensorTable::require(const std::string &name, const std::string &source) const {
    const TensorRef *t = find(name);
    if (t == nullptr)
        throw Error(PAGODA_ERR_NOT_FOUND, source + ": missing tensor '" + name + "'");
    return *t;
}

}  // namespace pagoda::model
