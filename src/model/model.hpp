// An opened model, whatever its file format: config and weights under canonical (Hugging Face)
// names. Its tokenizer is built above (engine/model_tokenizer.hpp), from the folder or from
// gguf_vocabulary(). Immutable once open; shared by every engine that serves it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "common/mapped_file.hpp"
#include "model/model_config.hpp"
#include "model/tensor_table.hpp"

namespace pagoda {
struct GgufVocabulary;
}

namespace pagoda::model {

enum class SourceFormat { Gguf, HuggingFace };

// Called as opening advances: fraction in [0, 1] and what is being done. Returning false cancels.
using ProgressFn = std::function<bool(double fraction, const char *stage)>;

class Model {
public:
    virtual ~Model() = default;
    const std::string &source() const noexcept { return source_; }
    SourceFormat format() const noexcept { return format_; }
    const ModelConfig &config() const noexcept { return config_; }
    // Tensors as the file stores them: F32, F16, BF16 or a quantized block type.
    const TensorTable &tensors() const noexcept { return tensors_; }
    uint64_t parameter_count() const noexcept { return parameter_count_; }
    // Bytes of all tensors as stored.
    uint64_t weight_bytes() const noexcept { return weight_bytes_; }
    // The vocabulary a GGUF file carries, for building its tokenizer; NULL for other formats.
    virtual const GgufVocabulary *gguf_vocabulary() const noexcept { return nullptr; }
    // The file mappings the tensors point into.
    virtual std::vector<const MappedFile *> mappings() const { return {}; }

protected:
    Model() = default;
    std::string source_;
    SourceFormat format_ = SourceFormat::Gguf;
    ModelConfig config_;
    TensorTable tensors_;
    uint64_t parameter_count_ = 0;
    uint64_t weight_bytes_ = 0;
};

// The values of one block of the type a mixture of experts' down projections are stored in (1 for
// a float type or a dense model): a device's share of each expert's columns keeps its blocks whole
// only in multiples of it.
int64_t expert_column_block(const Model &model);

// Opens a GGUF file or a Hugging Face folder. Reports progress through `progress` (may be
// empty) and stops with Error(PAGODA_ERR_CANCELLED) when it returns false or `*cancel` turns
// true. Other errors as open_gguf_model and HfCheckpoint throw them.
std::shared_ptr<const Model> open_model(const std::string &path, const ProgressFn &progress,
                                        const std::atomic<bool> *cancel);

}  // namespace pagoda::model
