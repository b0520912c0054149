// One engine served under a model name: its tokenizer, limits, driver thread, and the
// generations in flight on it (keyed by engine request id; loop thread only).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pagoda/engine.h"
#include "server/engine_driver.hpp"
#include "server/engine_port.hpp"
#include "server/fill_in_middle.hpp"
#include "server/request_parse.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagoda::server {

class Generation;
class Embedding;

struct ServedModel {
    std::string name;
    std::shared_ptr<EnginePort> engine;
    std::shared_ptr<const tok::Tokenizer> tokenizer;  // NULL: token ids only
    ModelLimits limits;
    int64_t created = 0;  // Unix seconds, for /v1/models
    std::unique_ptr<EngineDriver> driver;
    // Generations in flight: one entry per engine request, a batch of prompts sharing one.
    std::map<uint64_t, std::shared_ptr<Generation>> generations;
    // /v1/embeddings in flight: one entry per engine request, several sharing one Embedding.
    std::map<uint64_t, std::shared_ptr<Embedding>> embeddings;
    int64_t embedding_size = 0;  // the hidden size: the length of every embedding
    // A replica of a served placement (placement_routing.hpp): its group; -1 otherwise. Several
    // replicas share a name.
    int32_t placement_group = -1;
    // The vocabulary's fill-in-the-middle markers (completions' suffix), found once.
    std::optional<FimTokens> fim;

    ServedModel();
    ~ServedModel();
};

}  // namespace pagoda::server
