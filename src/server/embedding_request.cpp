#include "server/embedding_request.hpp"

#include <set>

#include "server/api_error.hpp"
#include "server/body_fields.hpp"

namespace pagoda::server {

using nlohmann::json;

namespace {

// OpenAI caps an embeddings request at 2048 inputs.
constexpr size_t kMaxInputs = 2048;

int32_t token_id(const json &v, const std::string &where, const EmbeddingLimits &limits) {
    if (!v.is_number_integer())
        invalid_field("input", where + " must be an integer token id, not " + describe(v));
    const int64_t id = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                           ? INT64_MAX
                           : v.get<int64_t>();
    if (id < 0 || (limits.vocab_size > 0 && id >= limits.vocab_size))
        invalid_field("input", where + " is token id " + std::to_string(id) +
                                   ", outside the vocabulary [0, " +
                                   std::to_string(limits.vocab_size) + ")");
    return int32_t(id);
}

EmbeddingInput ids_input(const json &array, const std::string &where,
                         const EmbeddingLimits &limits) {
    if (array.empty()) invalid_field("input", where + " is an empty array of token ids");
    if (limits.context_length > 0 && int64_t(array.size()) > limits.context_length)
        invalid_field("input", where + " has " + std::to_string(array.size()) +
                                   " tokens, more than the model's context of " +
                                   std::to_string(limits.context_length));
    EmbeddingInput in;
    in.is_ids = true;
    for (size_t i = 0; i < array.size(); ++i)
        in.ids.push_back(token_id(array[i], where + "[" + std::to_string(i) + "]", limits));
    return in;
}

EmbeddingInput text_input(const json &v, const std::string &where) {
    if (v.get_ref<const std::string &>().empty())
        invalid_field("input", where + " is an empty string");
    EmbeddingInput in;
    in.text = v.get<std::string>();
    return in;
}

// OpenAI's four shapes: a string, an array of strings, an array of ids, an array of arrays of
// ids. An array mixing strings and id arrays is taken too (vLLM's batch does).
std::vector<EmbeddingInput> parse_input(const json &body, const EmbeddingLimits &limits) {
    const json *v = field(body, "input");
    if (v == nullptr) invalid_field("input", "input is required");
    if (v->is_string()) return {text_input(*v, "input")};
    if (!v->is_array())
        invalid_field("input", std::string("input must be a string or an array, not ") +
                                   describe(*v));
    if (v->empty()) invalid_field("input", "input is an empty array");
    if (v->front().is_number()) return {ids_input(*v, "input", limits)};
    if (v->size() > kMaxInputs)
        invalid_field("input", "input holds " + std::to_string(v->size()) +
                                   " inputs, more than " + std::to_string(kMaxInputs));
    std::vector<EmbeddingInput> out;
    for (size_t i = 0; i < v->size(); ++i) {
        const json &item = (*v)[i];
        const std::string where = "input[" + std::to_string(i) + "]";
        if (item.is_string())
            out.push_back(text_input(item, where));
        else if (item.is_array())
            out.push_back(ids_input(item, where, limits));
        else
            invalid_field("input", where + " must be a string or an array of token ids, not " +
                                       describe(item));
    }
    return out;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const json &body, const EmbeddingLimits &limits) {
    static const std::set<std::string> known = {"model",     "input",     "encoding_format",
                                                "dimensions", "user",     "normalize",
                                                "pooling",   "add_special_tokens"};
    for (auto it = body.begin(); it != body.end(); ++it)
        if (known.count(it.key()) == 0)
            invalid_field(it.key(),
                          "unknown field '" + it.key() + "': this server does not support it");
    EmbeddingRequest r;
    r.inputs = parse_input(body, limits);

    const std::string format = get_string(body, "encoding_format");
    if (format == "base64")
        r.base64 = true;
    else if (!format.empty() && format != "float")
        invalid_field("encoding_format",
                      "encoding_format must be \"float\" or \"base64\" (got \"" + format + "\")");

    // Matryoshka truncation is meaningful only for models trained for it, which nothing a
    // decoder checkpoint says here reveals: only the model's own size is served.
    if (const json *d = field(body, "dimensions")) {
        if (!d->is_number_integer())
            invalid_field("dimensions",
                          std::string("dimensions must be an integer, not ") + describe(*d));
        if (!(d->is_number_unsigned() || d->get<int64_t>() >= 0) ||
            d->get<uint64_t>() != uint64_t(limits.dimensions))
            invalid_field("dimensions",
                          "dimensions must be this model's embedding size, " +
                              std::to_string(limits.dimensions) + " (got " + d->dump() +
                              "): truncated embeddings are not served for this model");
    }
    (void)get_string(body, "user");  // checked as OpenAI types it; not used
    (void)get_string(body, "model");

    if (field(body, "normalize") != nullptr)
        r.normalize = get_bool(body, "normalize", true) ? PAGODA_EMBEDDING_NORMALIZE_L2
                                                        : PAGODA_EMBEDDING_NORMALIZE_NONE;
    const std::string pooling = get_string(body, "pooling");
    if (pooling == "last")
        r.pooling = PAGODA_POOLING_LAST;
    else if (pooling == "mean")
        r.pooling = PAGODA_POOLING_MEAN;
    else if (!pooling.empty())
        invalid_field("pooling", "pooling must be \"last\" or \"mean\" (got \"" + pooling + "\")");
    r.add_special_tokens = get_bool(body, "add_special_tokens", true);
    return r;
}

}  // namespace pagoda::server
