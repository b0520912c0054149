#include "server/request_parse.hpp"

#include <cmath>
#include <limits>
#include <set>

#include "sample/request_defaults.hpp"
#include "server/api_error.hpp"
#include "server/body_fields.hpp"
#include "server/structured_output.hpp"

namespace pagoda::server {

using nlohmann::json;

namespace {

// Choices one completions request may ask for (prompts x n): each is a sequence in the engine.
constexpr size_t kMaxChoices = 1024;

void refuse_unknown_fields(const json &body, const std::set<std::string> &known) {
    for (auto it = body.begin(); it != body.end(); ++it)
        if (known.count(it.key()) == 0)
            invalid_field(it.key(), "unknown field '" + it.key() + "': this server does not support it");
}

void unsupported_unless(bool ok, const char *name, const std::string &why) {
    if (!ok) throw ApiError(400, std::string(name) + ": " + why, name, "unsupported_value");
}

int32_t checked_token(const json &v, const std::string &where, const ModelLimits &limits) {
    if (!v.is_number_integer())
        invalid_field(where, where + " must hold integer token ids, not " + describe(v));
    int64_t id = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
    if (id < 0 || (limits.vocab_size > 0 && id >= limits.vocab_size))
        invalid_field(where, where + " holds token id " + std::to_string(id) +
                                 ", outside the vocabulary [0, " + std::to_string(limits.vocab_size) + ")");
    return int32_t(id);
}

CompletionPrompt checked_prompt(const json &one, const std::string &where, const ModelLimits &limits) {
    CompletionPrompt p;
    if (one.is_string()) {
        p.text = one.get<std::string>();
        if (p.text.empty()) invalid_field("prompt", where + " is empty");
        return p;
    }
    if (!one.is_array())
        invalid_field("prompt", where + " must be a string or an array of token ids, not " + describe(one));
    if (one.empty()) invalid_field("prompt", where + " is empty");
    p.is_ids = true;
    p.ids.reserve(one.size());
    for (const json &t : one) p.ids.push_back(checked_token(t, where, limits));
    return p;
}

// OpenAI's four shapes: a string, token ids, an array of strings, an array of token-id arrays
// (a batch: one choice per prompt, n each, answered together).
void parse_prompt(const json &body, const ModelLimits &limits, GenerationRequest &r) {
    const json *p = field(body, "prompt");
    if (p == nullptr) invalid_field("prompt", "prompt is required");
    if (!(p->is_array() && !p->empty() && (p->at(0).is_string() || p->at(0).is_array()))) {
        r.prompts.push_back(checked_prompt(*p, "prompt", limits));
        return;
    }
    if (p->size() * size_t(r.options.n) > kMaxChoices)
        invalid_field("prompt", "a batch of " + std::to_string(p->size()) + " prompts with n = " +
                                    std::to_string(r.options.n) + " asks for more than " +
                                    std::to_string(kMaxChoices) + " choices");
    for (size_t i = 0; i < p->size(); ++i)
        r.prompts.push_back(checked_prompt(p->at(i), "prompt[" + std::to_string(i) + "]", limits));
}

void parse_stop(const json &body, const ModelLimits &limits, GenerationRequest &r) {
    if (const json *s = field(body, "stop")) {
        if (s->is_string()) {
            r.stop.push_back(s->get<std::string>());
        } else if (s->is_array()) {
            if (s->size() > 16) invalid_field("stop", "stop holds at most 16 strings");
            for (const json &x : *s) {
                if (!x.is_string()) invalid_field("stop", "stop must be a string or an array of strings");
                r.stop.push_back(x.get<std::string>());
            }
        } else {
            invalid_field("stop", "stop must be a string or an array of strings, not " + describe(*s));
        }
        for (const std::string &x : r.stop)
            if (x.empty()) invalid_field("stop", "stop strings must not be empty");
    }
    if (const json *ids = field(body, "stop_token_ids")) {
        if (!ids->is_array() || ids->size() > 64)
            invalid_field("stop_token_ids", "stop_token_ids must be an array of at most 64 token ids");
        for (const json &t : *ids) r.stop_token_ids.push_back(checked_token(t, "stop_token_ids", limits));
    }
}

// OpenAI's logit_bias: {"50256": -100}; keys are token ids in decimal, values in [-100, 100].
void parse_logit_bias(const json &body, const ModelLimits &limits, GenerationRequest &r) {
    const json *lb = field(body, "logit_bias");
    if (lb == nullptr) return;
    if (!lb->is_object())
        invalid_field("logit_bias", "logit_bias must be an object mapping token ids to biases, "
                                    "not " + describe(*lb));
    std::set<int64_t> seen;
    for (auto it = lb->begin(); it != lb->end(); ++it) {
        const std::string &key = it.key();
        const std::string where = "logit_bias key '" + key + "'";
        bool digits = !key.empty() && key.size() <= 10;
        for (char ch : key) digits = digits && ch >= '0' && ch <= '9';
        if (!digits) invalid_field("logit_bias", where + " is not a token id (a decimal integer)");
        const int64_t id = std::stoll(key);
        if (limits.vocab_size > 0 && id >= limits.vocab_size)
            invalid_field("logit_bias", where + " is outside the vocabulary [0, " +
                                            std::to_string(limits.vocab_size) + ")");
        if (id > std::numeric_limits<int32_t>::max())
            invalid_field("logit_bias", where + " is not a token id (too large)");
        if (!seen.insert(id).second)
            invalid_field("logit_bias", where + " names token " + std::to_string(id) + " twice");
        if (!it->is_number())
            invalid_field("logit_bias",
                          where + ": the bias must be a number, not " + describe(*it));
        const double bias = it->get<double>();
        if (!std::isfinite(bias) || bias < -100.0 || bias > 100.0)
            invalid_field("logit_bias",
                          where + ": the bias must be in [-100, 100] (got " + it->dump() + ")");
        r.logit_bias.push_back({int32_t(id), float(bias)});
    }
}

// vLLM's allowed_token_ids (a non-empty list) and bad_words (strings, tokenized at submit).
void parse_token_filters(const json &body, const ModelLimits &limits, GenerationRequest &r) {
    if (const json *ids = field(body, "allowed_token_ids")) {
        if (!ids->is_array() || ids->empty())
            invalid_field("allowed_token_ids",
                          "allowed_token_ids must be a non-empty array of token ids");
        for (const json &t : *ids)
            r.allowed_token_ids.push_back(checked_token(t, "allowed_token_ids", limits));
    }
    if (const json *words = field(body, "bad_words")) {
        if (!words->is_array() || words->size() > 1024)
            invalid_field("bad_words", "bad_words must be an array of at most 1024 strings");
        for (size_t i = 0; i < words->size(); ++i) {
            const json &w = words->at(i);
            const std::string where = "bad_words[" + std::to_string(i) + "]";
            if (!w.is_string())
                invalid_field("bad_words", where + " must be a string, not " + describe(w));
            const std::string word = w.get<std::string>();
            if (word.find_first_not_of(" \t\n\r\f\v") == std::string::npos)
                invalid_field("bad_words", where + " is empty or only whitespace");
            r.bad_words.push_back(word);
        }
    }
}

// What both endpoints share: sampling, stopping, streaming, vLLM's extras.
void parse_common(const json &body, const ModelLimits &limits, GenerationRequest &r) {
    if (const json *m = field(body, "model")) {
        if (!m->is_string()) invalid_field("model", "model must be a string");
        r.model = m->get<std::string>();
    }
    r.options = sample::default_request_options();
    pagoda_request_options_t &o = r.options;
    o.temperature = float(get_number(body, "temperature", 0.0, 2.0, 1.0));
    o.top_p = float(get_number(body, "top_p", 0.0, 1.0, 1.0, true));
    int64_t top_k = get_int(body, "top_k", -1, std::numeric_limits<int32_t>::max(), 0);
    o.top_k = top_k < 0 ? 0 : int32_t(top_k);  // vLLM's -1 = all
    o.min_p = float(get_number(body, "min_p", 0.0, 1.0, 0.0));
    o.repetition_penalty = float(get_number(body, "repetition_penalty", 0.0, 100.0, 1.0, true));
    o.presence_penalty = float(get_number(body, "presence_penalty", -2.0, 2.0, 0.0));
    o.frequency_penalty = float(get_number(body, "frequency_penalty", -2.0, 2.0, 0.0));
    o.length_penalty = float(get_number(body, "length_penalty", -100.0, 100.0, 1.0));
    o.early_stopping = get_bool(body, "early_stopping", false) ? 1 : 0;
    o.priority = int32_t(get_int(body, "priority", std::numeric_limits<int32_t>::min(),
                                 std::numeric_limits<int32_t>::max(), 0));
    if (const json *s = field(body, "seed")) {
        if (!s->is_number_integer()) invalid_field("seed", "seed must be an integer, not " + describe(*s));
        o.seed = s->is_number_unsigned() ? s->get<uint64_t>() : uint64_t(s->get<int64_t>());
    } else {
        o.flags |= PAGODA_REQUEST_FRESH_SEED;  // OpenAI: without a seed, every request differs
    }
    o.n = int32_t(get_int(body, "n", 1, 16, 1));
    int64_t best_of = get_int(body, "best_of", 1, 16, o.n);
    if (best_of < o.n)
        invalid_field("best_of", "best_of (" + std::to_string(best_of) + ") must be at least n (" +
                                     std::to_string(o.n) + ")");
    o.best_of = int32_t(best_of);
    if (get_bool(body, "use_beam_search", false)) o.beam_width = o.best_of;

    if (get_bool(body, "ignore_eos", false)) o.flags |= PAGODA_REQUEST_IGNORE_EOS;
    if (!get_bool(body, "skip_special_tokens", true)) o.flags |= PAGODA_REQUEST_KEEP_SPECIAL_TEXT;
    if (get_bool(body, "include_stop_str_in_output", false)) o.flags |= PAGODA_REQUEST_INCLUDE_STOP_STRING;
    parse_stop(body, limits, r);

    r.stream = get_bool(body, "stream", false);
    if (const json *so = field(body, "stream_options")) {
        if (!r.stream) invalid_field("stream_options", "stream_options is only allowed when stream is true");
        if (!so->is_object()) invalid_field("stream_options", "stream_options must be an object");
        refuse_unknown_fields(*so, {"include_usage", "continuous_usage_stats"});
        r.include_usage = get_bool(*so, "include_usage", false);
        unsupported_unless(!get_bool(*so, "continuous_usage_stats", false), "stream_options",
                           "continuous_usage_stats is not supported");
    }
    if (r.stream && o.best_of > o.n)
        invalid_field("best_of", "best_of greater than n cannot be streamed");

    r.echo = get_bool(body, "echo", false);
    parse_logit_bias(body, limits, r);
    parse_token_filters(body, limits, r);
    o.min_tokens = int32_t(get_int(body, "min_tokens", 0, std::numeric_limits<int32_t>::max(), 0));
    parse_structured_output(body, r);  // response_format, guided_*, structured_outputs
    r.prompt_logprobs = int32_t(get_int(body, "prompt_logprobs", 0, 20, -1));
    if (r.prompt_logprobs >= 0 && r.stream)  // as vLLM: they would hold back the first chunk
        invalid_field("prompt_logprobs", "prompt_logprobs cannot be streamed: set stream to false");
    if (const json *u = field(body, "user"))
        if (!u->is_string()) invalid_field("user", "user must be a string");
}

int32_t max_tokens_field(const json &body, const char *name, const ModelLimits &limits, int64_t dflt) {
    int64_t hi = limits.context_length > 0 ? limits.context_length : std::numeric_limits<int32_t>::max();
    return int32_t(get_int(body, name, 1, hi, dflt));
}

// vLLM: min_tokens may not pass max_tokens.
void check_min_tokens(const pagoda_request_options_t &o) {
    if (o.min_tokens > o.max_tokens)
        invalid_field("min_tokens", "min_tokens (" + std::to_string(o.min_tokens) +
                                        ") must be at most max_tokens (" +
                                        std::to_string(o.max_tokens) + ")");
}

void parse_message(const json &m, size_t i, json &out) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) invalid_field(where, where + " must be an object");
    static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
    for (auto it = m.begin(); it != m.end(); ++it) {
        const std::string &k = it.key();
        if (k == "role" || k == "content" || k == "name" || k == "tool_call_id") continue;
        if (k == "tool_calls") continue;
        throw ApiError(400, where + "." + k + " is not supported", where + "." + k, "unsupported_value");
    }
    const json *role = field(m, "role");
    if (role == nullptr || !role->is_string() || roles.count(role->get<std::string>()) == 0)
        invalid_field(where + ".role", where + ".role must be one of system, developer, user, assistant, tool");
    json msg = {{"role", *role}};
    const json *content = field(m, "content");
    if (content == nullptr) {
        msg["content"] = "";
    } else if (content->is_string()) {
        msg["content"] = *content;
    } else if (content->is_array()) {
        // Text parts are joined; other kinds (images, audio) this server cannot read.
        std::string text;
        for (size_t j = 0; j < content->size(); ++j) {
            const json &part = content->at(j);
            const std::string pw = where + ".content[" + std::to_string(j) + "]";
            if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
                !part["text"].is_string())
                throw ApiError(400, pw + ": only {\"type\": \"text\", \"text\": ...} parts are supported",
                               pw, "unsupported_value");
            text += part["text"].get<std::string>();
        }
        msg["content"] = text;
    } else {
        invalid_field(where + ".content", where + ".content must be a string, an array of parts or null");
    }
    const json *calls = field(m, "tool_calls");
    if (calls != nullptr && !(calls->is_array() && calls->empty())) {
        if (*role != "assistant")
            invalid_field(where + ".tool_calls",
                          where + ".tool_calls belongs to assistant messages");
        msg["tool_calls"] = checked_tool_calls(*calls, where + ".tool_calls");
    }
    for (const char *k : {"name", "tool_call_id"})
        if (const json *v = field(m, k)) {
            if (!v->is_string()) invalid_field(where + "." + k, where + "." + k + " must be a string");
            msg[k] = *v;
        }
    out.push_back(std::move(msg));
}

}  // namespace

nlohmann::json parse_json_object(const std::string &body) {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
    if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
    return j;
}

std::string requested_model(const json &body) {
    const json *m = field(body, "model");
    if (m == nullptr) return {};
    if (!m->is_string()) invalid_field("model", "model must be a string");
    return m->get<std::string>();
}

GenerationRequest parse_completion_request(const json &body, const ModelLimits &limits) {
    refuse_unknown_fields(body, {"model", "prompt", "max_tokens", "temperature", "top_p", "n", "stop",
                                 "seed", "presence_penalty", "frequency_penalty", "logprobs", "stream",
                                 "stream_options", "echo", "suffix", "user", "logit_bias", "best_of",
                                 "use_beam_search", "top_k", "min_p", "repetition_penalty", "ignore_eos",
                                 "length_penalty", "early_stopping", "stop_token_ids", "skip_special_tokens",
                                 "include_stop_str_in_output", "add_special_tokens", "priority",
                                 "min_tokens", "response_format", "prompt_logprobs", "bad_words",
                                 "allowed_token_ids", "guided_json", "guided_regex", "guided_grammar",
                                 "guided_choice", "guided_decoding_backend", "structured_outputs"});
    GenerationRequest r;
    parse_common(body, limits, r);
    parse_prompt(body, limits, r);
    // max_tokens 0 asks for the prompt alone (echo and logprobs score it, as lm-eval does).
    if (const json *m = field(body, "max_tokens"); m != nullptr && m->is_number() && m->get<double>() == 0) {
        if (!r.echo) invalid_field("max_tokens", "max_tokens must be at least 1 (0 only with echo)");
        r.prompt_only = true;
        r.options.max_tokens = 1;
    } else {
        r.options.max_tokens = max_tokens_field(body, "max_tokens", limits, 16);  // OpenAI's default
    }
    check_min_tokens(r.options);
    r.logprobs = int32_t(get_int(body, "logprobs", 0, 20, -1));
    r.options.logprobs = r.logprobs;
    if (const json *s = field(body, "suffix")) {
        if (!s->is_string()) invalid_field("suffix", "suffix must be a string, not " + describe(*s));
        r.suffix = s->get<std::string>();
        if (!r.suffix.empty() && r.echo)  // what would echo show: the prefix, or both halves?
            invalid_field("echo", "echo cannot be combined with a suffix (fill-in-the-middle)");
    }
    if (!get_bool(body, "add_special_tokens", true)) r.options.flags |= PAGODA_REQUEST_NO_SPECIAL_TOKENS;
    return r;
}

GenerationRequest parse_chat_request(const json &body, const ModelLimits &limits) {
    refuse_unknown_fields(body, {"model", "messages", "max_tokens", "max_completion_tokens", "temperature",
                                 "top_p", "n", "stop", "seed", "presence_penalty", "frequency_penalty",
                                 "logprobs", "top_logprobs", "stream", "stream_options", "user",
                                 "logit_bias", "best_of", "use_beam_search", "top_k", "min_p",
                                 "repetition_penalty", "ignore_eos", "length_penalty", "early_stopping",
                                 "stop_token_ids", "skip_special_tokens", "include_stop_str_in_output",
                                 "add_special_tokens", "priority", "min_tokens", "response_format",
                                 "tools", "tool_choice", "parallel_tool_calls", "functions",
                                 "function_call", "add_generation_prompt", "continue_final_message",
                                 "chat_template", "chat_template_kwargs", "echo", "store", "metadata",
                                 "prompt_logprobs", "bad_words", "allowed_token_ids", "guided_json",
                                 "guided_regex", "guided_grammar", "guided_choice",
                                 "guided_decoding_backend", "structured_outputs"});
    GenerationRequest r;
    r.chat = true;
    parse_common(body, limits, r);
    const json *messages = field(body, "messages");
    if (messages == nullptr) invalid_field("messages", "messages is required");
    if (!messages->is_array() || messages->empty())
        invalid_field("messages", "messages must be a non-empty array of messages");
    if (messages->size() > 4096) invalid_field("messages", "messages holds more than 4096 messages");
    r.messages = json::array();
    for (size_t i = 0; i < messages->size(); ++i) parse_message(messages->at(i), i, r.messages);

    // max_completion_tokens is OpenAI's newer name; it wins when both are given.
    int64_t dflt = limits.context_length > 0 ? limits.context_length : 256;
    r.options.max_tokens = max_tokens_field(body, "max_tokens", limits, dflt);
    if (field(body, "max_completion_tokens") != nullptr)
        r.options.max_tokens = max_tokens_field(body, "max_completion_tokens", limits, dflt);
    check_min_tokens(r.options);
    bool logprobs = get_bool(body, "logprobs", false);
    int64_t top = get_int(body, "top_logprobs", 0, 20, 0);
    if (field(body, "top_logprobs") != nullptr && !logprobs)
        invalid_field("top_logprobs", "top_logprobs needs logprobs set to true");
    r.logprobs = logprobs ? int32_t(top) : -1;
    r.options.logprobs = r.logprobs;

    r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
    unsupported_unless(!get_bool(body, "continue_final_message", false), "continue_final_message",
                       "continuing the final message is not supported");
    unsupported_unless(field(body, "chat_template") == nullptr, "chat_template",
                       "a chat template per request is not supported; the model's own is used");
    if (const json *k = field(body, "chat_template_kwargs"))
        unsupported_unless(k->is_object() && k->empty(), "chat_template_kwargs", "not supported");
    r.tools = parse_tool_request(body);  // tool_request.hpp: tools, tool_choice, functions, ...
    unsupported_unless(!get_bool(body, "store", false), "store", "storing completions is not supported");
    if (const json *md = field(body, "metadata"))
        if (!md->is_object()) invalid_field("metadata", "metadata must be an object");
    // Rendered chat prompts carry their own special tokens (vLLM's default for chat).
    if (!get_bool(body, "add_special_tokens", false)) r.options.flags |= PAGODA_REQUEST_NO_SPECIAL_TOKENS;
    return r;
}

}  // namespace pagoda::server
