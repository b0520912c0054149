#include "engine/model_tokenizer.hpp"

#include <filesystem>
#include <system_error>

#include "tokenizer/gguf_vocabulary.hpp"

namespace pagoda::engine {

std::shared_ptr<const tok::Tokenizer> open_model_tokenizer(const model::Model &model) {
    const std::string &path = model.source();
    if (model.format() == model::SourceFormat::HuggingFace) {
        // A folder without tokenizer.json serves token ids only.
        std::error_code ec;
        if (!std::filesystem::is_regular_file(std::filesystem::path(path) / "tokenizer.json", ec))
            return nullptr;
        return tok::Tokenizer::from_file(path);
    }
    // A file without tokenizer.ggml.* keys serves token ids only.
    const GgufVocabulary *vocabulary = model.gguf_vocabulary();
    if (vocabulary == nullptr || vocabulary->tokens.empty()) return nullptr;
    return tok::Tokenizer::from_gguf(*vocabulary, path);
}

}  // namespace pagoda::engine
