// libFuzzer target for config.json and generation_config.json: any input must either give a
// validated ModelConfig or fail with pagoda::Error. A crash, a sanitizer report or another
// exception (a stray nlohmann::json type_error, say) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.hpp"
#include "model/hf_config.hpp"
#include "model/llama_tensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    try {
        pagoda::model::ModelConfig config = pagoda::model::parse_hf_config(text, "config.json");
        // A validated config must give shapes that are positive and fit int64 products.
        for (const auto &t : pagoda::model::llama_expected_tensors(config))
            for (int64_t d : t.shape)
                if (d <= 0) __builtin_trap();
        // The same text as generation_config.json over a valid config.
        pagoda::model::apply_hf_generation_config(config, text, "generation_config.json");
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad file.
    }
    return 0;
}
