// A Hugging Face checkpoint laid out as llama.cpp's convert_hf_to_gguf.py lays it out in GGUF, as
// the source `pagoda quantize` writes from: the `<arch>.*` keys from the parsed config, the
// tensors under GGUF names (llama's Q/K rows permuted for interleaved RoPE, norms and biases in
// F32, Llama 3 RoPE scaling as the rope_freqs.weight tensor), and the vocabulary given.
#pragma once

#include <memory>

#include "tokenizer/gguf_vocabulary.hpp"
#include "model/gguf_quantize.hpp"
#include "model/hf_checkpoint.hpp"

namespace pagoda::model {

// general.architecture for `a`: "llama" (Mistral too, as llama.cpp converts it), or the
// architecture's own name.
const char *gguf_architecture(Architecture a);

// The source for quantize_to_gguf; it keeps `checkpoint` alive. `vocabulary` (the folder's
// tokenizer, converted above model/) must have config().vocab_size tokens. Throws Error:
// FORMAT when the vocabulary's size disagrees with config.json, UNSUPPORTED for what a GGUF
// file read by Pagoda could not carry (a Llama with attention biases), naming config.json.
QuantizeSource hf_quantize_source(std::shared_ptr<const HfCheckpoint> checkpoint,
                                  const GgufVocabulary &vocabulary);

}  // namespace pagoda::model
