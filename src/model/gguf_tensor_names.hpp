// GGUF's tensor names for the Llama family ("blk.3.attn_q.weight") and the canonical (Hugging
// Face) names the core uses ("model.layers.3.self_attn.q_proj.weight"), both ways: the GGUF
// loader reads with them, the Hugging Face to GGUF conversion writes with them.
#pragma once

#include <string>
#include <string_view>

namespace pagoda::model {

// The canonical name of GGUF tensor `gguf`; "" when the name means nothing to us.
std::string canonical_tensor_name(std::string_view gguf);

// The GGUF name of canonical tensor `canonical`; "" when GGUF has no name for it.
std::string gguf_tensor_name(std::string_view canonical);

}  // namespace pagoda::model
