#include "engine/model_quantize.hpp"

#include <filesystem>
#include <memory>
#include <system_error>

#include "model/hf_checkpoint.hpp"
#include "model/hf_to_gguf.hpp"
#include "tokenizer/hf_gguf_vocabulary.hpp"

namespace pagoda::engine {

model::QuantizeSummary quantize_model(const std::string &input_path, const std::string &output_path,
                                      model::QuantMix mix, int threads, const model::ProgressFn &progress) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input_path, ec))
        return model::quantize_gguf(input_path, output_path, mix, threads, progress);

    auto checkpoint = std::make_shared<const model::HfCheckpoint>(input_path);
    const model::ModelConfig &config = checkpoint->config();
    const GgufVocabulary vocabulary = tok::gguf_vocabulary_from_hf(
        checkpoint->folder(), config.vocab_size, config.bos_token_id,
        config.eos_token_ids.empty() ? -1 : config.eos_token_ids.front());
    const model::QuantizeSource source = model::hf_quantize_source(std::move(checkpoint), vocabulary);
    return model::quantize_to_gguf(source, output_path, mix, threads, progress);
}

}  // namespace pagoda::engine
