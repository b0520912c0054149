// A Hugging Face model folder opened for serving: config.json (with generation_config.json's
// token ids), and the weights of model.safetensors or of the shards model.safetensors.index.json
// lists, all mapped (never copied) for as long as the checkpoint lives.
#pragma once

#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "model/safetensors_file.hpp"
#include "model/tensor_table.hpp"

namespace pagoda::model {

class HfCheckpoint {
public:
    // Opens `folder` and checks that it holds every tensor its config implies, in the shape the
    // config implies (llama_expected_tensors). Throws Error: NOT_FOUND (no config.json, no
    // weights, a listed shard absent), FORMAT (malformed JSON or safetensors, a tensor missing,
    // a tensor in two shards, a tensor the index puts in a shard that lacks it, a tensor of the
    // wrong shape or of a non-float type), UNSUPPORTED (architecture, dtype, rope scaling).
    explicit HfCheckpoint(const std::string &folder);

    HfCheckpoint(HfCheckpoint &&) noexcept = default;
    HfCheckpoint &operator=(HfCheckpoint &&) noexcept = default;

    const std::string &folder() const noexcept { return folder_; }
    const ModelConfig &config() const noexcept { return config_; }
    // Tensors under their Hugging Face names, pointing into the mapped shards.
    const TensorTable &tensors() const noexcept { return tensors_; }
    const std::vector<SafetensorsFile> &shards() const noexcept { return shards_; }

private:
    void load_single(const std::string &path);
    void load_sharded(const std::string &index_path);
    void add_shard(SafetensorsFile shard);
    void check_tensors() const;

    std::string folder_;
    ModelConfig config_;
    std::vector<SafetensorsFile> shards_;  // keep the maps the tensors point into
    TensorTable tensors_;
};

}  // namespace pagoda::model
