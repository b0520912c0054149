// What an embedding model's own files say about pooling its hidden states into one vector and
// normalizing it, as vLLM reads them: sentence-transformers' modules.json (a Normalize module
// means L2) and its Pooling module's config.json (pooling_mode_*) beside a Hugging Face
// checkpoint, or llama.cpp's `{arch}.pooling_type` in a GGUF file (no normalization key there).
// A plain decoder checkpoint says nothing, and the engine then takes vLLM's defaults for decoder
// embedding models: last token, L2.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::model {

enum class PoolingKind {
    unspecified,  // the files name none
    last,
    mean,
    unsupported   // named, but not one the engine pools by (`named` says which)
};

struct PoolingConfig {
    PoolingKind kind = PoolingKind::unspecified;
    std::string named;   // the files' name for it ("cls", "max", "rank", ...), when unsupported
    int normalize = -1;  // 1 = L2, 0 = as pooled, -1 = unspecified
    std::string source;  // the file (and key) that said so, for messages
};

// The sentence-transformers files in `folder`; unspecified without modules.json. Throws
// Error(PAGODA_ERR_FORMAT) naming the file for malformed ones.
PoolingConfig read_sentence_transformers_pooling(const std::string &folder);

// llama.cpp's pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank); `source` names the key.
PoolingConfig gguf_pooling(uint32_t pooling_type, const std::string &source);

}  // namespace pagoda::model
