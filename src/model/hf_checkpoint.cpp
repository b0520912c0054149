#include "model/hf_checkpoint.hpp"

#include <sys/stat.h>

#include <map>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/mapped_file.hpp"
#include "model/hf_config.hpp"
#include "common/json_text.hpp"
#include "model/llama_tensors.hpp"

namespace pagoda::model {

namespace {

using nlohmann::json;

bool file_exists(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string_view text_of(const MappedFile &file) {
    return {reinterpret_cast<const char *>(file.data()), size_t(file.size())};
}

// A shard name from the index must stay inside the folder.
bool plain_file_name(const std::string &name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// Mixtral's names for its mixture of experts, in the canonical (Qwen-style) ones:
// block_sparse_moe.gate → mlp.gate; block_sparse_moe.experts.J.{w1, w3, w2} → mlp.experts.J.
// {gate_proj, up_proj, down_proj}. Other names pass unchanged.
std::string mixtral_canonical_name(const std::string &name) {
    const size_t at = name.find(".block_sparse_moe.");
    if (at == std::string::npos) return name;
    const std::string head = name.substr(0, at) + ".mlp.";
    const std::string rest = name.substr(at + std::string(".block_sparse_moe.").size());
    if (rest == "gate.weight") return head + "gate.weight";
    // rest = "experts.J.wN.weight"
    const size_t dot = rest.find('.', std::string("experts.").size());
    if (rest.rfind("experts.", 0) == 0 && dot != std::string::npos) {
        const std::string expert = rest.substr(0, dot), matrix = rest.substr(dot + 1);
        if (matrix == "w1.weight") return head + expert + ".gate_proj.weight";
        if (matrix == "w3.weight") return head + expert + ".up_proj.weight";
        if (matrix == "w2.weight") return head + expert + ".down_proj.weight";
    }
    return name;  // refused later as a tensor the config does not explain
}

}  // namespace

HfCheckpoint::HfCheckpoint(const std::string &folder) : folder_(folder) {
    while (folder_.size() > 1 && folder_.back() == '/') folder_.pop_back();
    const std::string config_path = folder_ + "/config.json";
    if (!file_exists(config_path))
        throw Error(PAGODA_ERR_NOT_FOUND,
                    folder_ + ": no config.json (not a Hugging Face model folder?)");
    config_ = parse_hf_config(text_of(MappedFile(config_path)), config_path);

    const std::string generation_path = folder_ + "/generation_config.json";
    if (file_exists(generation_path))
        apply_hf_generation_config(config_, text_of(MappedFile(generation_path)), generation_path);
    config_.pooling = read_sentence_transformers_pooling(folder_);

    const std::string index_path = folder_ + "/model.safetensors.index.json";
    const std::string single_path = folder_ + "/model.safetensors";
    if (file_exists(index_path))
        load_sharded(index_path);
    else if (file_exists(single_path))
        load_single(single_path);
    else
        throw Error(
            PAGODA_ERR_NOT_FOUND,
            folder_ + ": no weights (neither model.safetensors nor model.safetensors.index.json)");
    check_tensors();
}

void HfCheckpoint::load_single(const std::string &path) { add_shard(SafetensorsFile(path)); }

void HfCheckpoint::load_sharded(const std::string &index_path) {
    const json index = parse_json_text(text_of(MappedFile(index_path)), index_path);
    auto map_it = index.is_object() ? index.find("weight_map") : index.end();
    if (map_it == index.end() || !map_it->is_object())
        throw Error(PAGODA_ERR_FORMAT,
                    index_path + ": expected an object with a \"weight_map\" object");

    std::map<std::string, std::string> shard_of;  // tensor -> shard file name
    std::set<std::string> shard_names;
    for (const auto &[tensor, shard] : map_it->items()) {
        if (!shard.is_string() || !plain_file_name(shard.get<std::string>()))
            throw Error(PAGODA_ERR_FORMAT, index_path + ": weight_map[\"" + tensor +
                                               "\"] is not the file name of a shard in the folder");
        shard_of[tensor] = shard.get<std::string>();
        shard_names.insert(shard.get<std::string>());
    }

    for (const std::string &name : shard_names) {
        const std::string path = folder_ + "/" + name;
        if (!file_exists(path))
            throw Error(PAGODA_ERR_NOT_FOUND,
                        index_path + ": lists shard " + name + ", which is not in " + folder_);
        add_shard(SafetensorsFile(path));
    }

    for (const auto &[tensor, shard] : shard_of) {
        const std::string path = folder_ + "/" + shard;
        const TensorRef *t = tensors_.find(tensor);
        if (t == nullptr || t->file != path)
            throw Error(PAGODA_ERR_FORMAT, index_path + ": puts tensor '" + tensor + "' in " +
                                               path + ", which does not hold it");
    }
}

void HfCheckpoint::add_shard(SafetensorsFile shard) {
    for (TensorRef t : shard.tensors()) {
        if (config_.architecture == Architecture::Mixtral) t.name = mixtral_canonical_name(t.name);
        if (const TensorRef *seen = tensors_.find(t.name))
            throw Error(PAGODA_ERR_FORMAT, folder_ + ": tensor '" + t.name + "' is in both " +
                                               seen->file + " and " + t.file);
        tensors_.add(t);
    }
    shards_.push_back(std::move(shard));
}

void HfCheckpoint::check_tensors() const {
    const std::vector<ExpectedTensor> expected = llama_expected_tensors(config_);
    std::set<std::string> wanted;
    for (const ExpectedTensor &e : expected) wanted.insert(e.name);
    // A tensor the config does not explain means a layer this program would skip: refused, as
    // in the GGUF loader. Two are left alone as transformers leaves them: old Llama checkpoints'
    // RoPE tables, and an LM head stored beside embeddings it is tied to.
    for (const auto &[name, t] : tensors_.all()) {
        constexpr std::string_view kRopeTable = ".self_attn.rotary_emb.inv_freq";
        const bool rope_table = std::string_view(name).ends_with(kRopeTable);
        if (wanted.count(name) || rope_table || (name == "lm_head.weight" && config_.tie_word_embeddings)) continue;
        throw Error(PAGODA_ERR_FORMAT, t.file + ": tensor '" + name + "' does not belong in a " +
                                           config_.architecture_name + " model of this config (" +
                                           std::to_string(config_.n_layers) + " layers)");
    }
    for (const ExpectedTensor &want : expected) {
        const TensorRef *t = tensors_.find(want.name);
        if (t == nullptr)
            // A checkpoint without a tensor its config needs is malformed, as in the GGUF loader;
            // NOT_FOUND stays for files that are not there.
            throw Error(PAGODA_ERR_FORMAT, folder_ + ": tensor '" + want.name +
                                                  "' is missing from the weights (config.json "
                                                  "implies shape " +
                                                  shape_string(want.shape) + ")");
        if (t->shape != want.shape)
            throw Error(PAGODA_ERR_FORMAT, t->file + ": tensor '" + want.name + "' has shape " +
                                               shape_string(t->shape) + ", config.json implies " +
                                               shape_string(want.shape));
        if (t->type != TensorType::F32 && t->type != TensorType::F16 && t->type != TensorType::BF16)
            throw Error(PAGODA_ERR_FORMAT, t->file + ": tensor '" + want.name + "' is " +
                                               tensor_type_name(t->type) +
                                               ", expected F32, F16 or BF16 weights");
    }
}

}  // namespace pagoda::model
