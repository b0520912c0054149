#include "engine/intake_wire.hpp"

#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace pagoda::engine {
namespace {

constexpr unsigned char kMagic[4] = {'P', 'G', 'I', 'W'};

// The fewest bytes one encoded request takes (empty prompt, no stop ids, strings, controls or
// constraint): id, prompt length, 19 four-byte scalars (SamplingParams' 8, min_tokens and the
// constraint's kind among them), the seed, six vector counts (stop ids and strings, bias, bad
// words, allowed ids, the constraint's text). A
// count of requests is checked against it before anything is reserved; too small only lets a
// forged count reserve more, too large would reject valid input (a test decodes minimal ones).
constexpr size_t kMinRequestBytes = 8 + 4 + 19 * 4 + 8 + 6 * 4;

class Writer {
public:
    std::vector<unsigned char> bytes;

    void u8(uint8_t v) { bytes.push_back(v); }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<unsigned char>(v >> (8 * i)));
    }
    void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
    void f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
    void count(size_t n, const char *what) {
        if (n > std::numeric_limits<uint32_t>::max())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string("intake: ") + what + " has " + std::to_string(n) +
                            " items, more than a u32 length can say");
        u32(static_cast<uint32_t>(n));
    }
    void i32s(const std::vector<int32_t> &v, const char *what) {
        count(v.size(), what);
        for (int32_t x : v) i32(x);
    }
};

class Reader {
public:
    explicit Reader(std::span<const unsigned char> bytes) : bytes_(bytes) {}

    size_t left() const { return bytes_.size() - pos_; }
    size_t offset() const { return pos_; }

    const unsigned char *take(size_t n, const char *what) {
        if (n > left())
            throw Error(PAGODA_ERR_FORMAT, std::string("intake truncated: ") + what + " needs " +
                                               std::to_string(n) + " bytes at offset " +
                                               std::to_string(pos_) + ", " +
                                               std::to_string(left()) + " left");
        const unsigned char *p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }
    uint8_t u8(const char *what) { return *take(1, what); }
    uint32_t u32(const char *what) {
        const unsigned char *p = take(4, what);
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
        return v;
    }
    uint64_t u64(const char *what) {
        const unsigned char *p = take(8, what);
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
        return v;
    }
    int32_t i32(const char *what) { return static_cast<int32_t>(u32(what)); }
    float f32(const char *what) { return std::bit_cast<float>(u32(what)); }

    // A u32 count of items at least `item_bytes` each, refused unless the bytes left can hold
    // that many: what makes reserving `count` items safe.
    uint32_t count(const char *what, size_t item_bytes) {
        const size_t at = pos_;
        const uint32_t n = u32(what);
        if (n > left() / item_bytes)
            throw Error(PAGODA_ERR_FORMAT, std::string("intake: ") + what + " count " +
                                               std::to_string(n) + " at offset " +
                                               std::to_string(at) + " needs at least " +
                                               std::to_string(uint64_t(n) * item_bytes) +
                                               " bytes, " + std::to_string(left()) + " left");
        return n;
    }
    std::vector<int32_t> i32s(const char *what) {
        std::vector<int32_t> v(count(what, 4));
        for (int32_t &x : v) x = i32(what);
        return v;
    }

private:
    std::span<const unsigned char> bytes_;
    size_t pos_ = 0;
};

// Structured bindings must name every member, in order: a field added to SamplingParams or
// RequestConfig stops these from compiling until the wire carries it (and kIntakeWireVersion
// goes up). The decoder binds the same names, so the two orders cannot drift apart.
void write_config(Writer &w, const RequestConfig &c) {
    const auto &[flags, max_tokens, sampling, seed, stop_token_ids, stop_strings, prompt_logprobs,
                 priority, n, best_of, beam_width, length_penalty, early_stopping, controls,
                 processor, processor_user, constraint_kind, constraint_text, constraint, pooling,
                 embedding_normalize] = c;
    const auto &[temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty,
                 frequency_penalty, logprobs] = sampling;
    const auto &[logit_bias, min_tokens, bad_words, allowed_token_ids] = controls;
    // Submit refuses a processor on a mesh over processes: a function pointer means nothing
    // in another process.
    if (processor != nullptr || processor_user != nullptr)
        throw Error(PAGODA_ERR_INTERNAL,
                    "intake: a request with a logits processor reached the wire");
    // Submit refuses embedding requests there too (the hidden states are not gathered over a
    // mesh); the other requests' pooling fields are 0, which check_request holds them to.
    if ((flags & PAGODA_REQUEST_EMBED) != 0 || pooling != 0 || embedding_normalize != 0)
        throw Error(PAGODA_ERR_INTERNAL, "intake: an embedding request reached the wire");
    w.u32(flags);
    w.i32(max_tokens);
    w.f32(temperature);
    w.i32(top_k);
    w.f32(top_p);
    w.f32(min_p);
    w.f32(repetition_penalty);
    w.f32(presence_penalty);
    w.f32(frequency_penalty);
    w.i32(logprobs);
    w.u64(seed);
    w.i32s(stop_token_ids, "stop_token_ids");
    w.count(stop_strings.size(), "stop_strings");
    for (const std::string &s : stop_strings) {
        w.count(s.size(), "a stop string");
        w.bytes.insert(w.bytes.end(), s.begin(), s.end());
    }
    w.i32(prompt_logprobs);
    w.i32(priority);
    w.i32(n);
    w.i32(best_of);
    w.i32(beam_width);
    w.f32(length_penalty);
    w.i32(early_stopping);
    w.count(logit_bias.size(), "logit_bias");
    for (const auto &[token, bias] : logit_bias) {
        w.i32(token);
        w.f32(bias);
    }
    w.i32(min_tokens);
    w.count(bad_words.size(), "bad_words");
    for (const std::vector<int32_t> &word : bad_words) w.i32s(word, "a bad word");
    w.i32s(allowed_token_ids, "allowed_token_ids");
    // The constraint goes as text: each rank compiles it against its own vocabulary.
    (void)constraint;
    w.i32(static_cast<int32_t>(constraint_kind));
    w.count(constraint_text.size(), "the constraint");
    w.bytes.insert(w.bytes.end(), constraint_text.begin(), constraint_text.end());
}

void read_config(Reader &r, RequestConfig &c) {
    auto &[flags, max_tokens, sampling, seed, stop_token_ids, stop_strings, prompt_logprobs,
           priority, n, best_of, beam_width, length_penalty, early_stopping, controls, processor,
           processor_user, constraint_kind, constraint_text, constraint, pooling,
           embedding_normalize] = c;
    auto &[temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty,
           frequency_penalty, logprobs] = sampling;
    auto &[logit_bias, min_tokens, bad_words, allowed_token_ids] = controls;
    processor = nullptr;  // never on the wire
    processor_user = nullptr;
    pooling = PAGODA_POOLING_MODEL;  // nor these (embedding requests stay on one device)
    embedding_normalize = PAGODA_EMBEDDING_NORMALIZE_MODEL;
    flags = r.u32("flags");
    if ((flags & PAGODA_REQUEST_EMBED) != 0)
        throw Error(PAGODA_ERR_FORMAT, "intake: an embedding request (rank 0 sends none)");
    max_tokens = r.i32("max_tokens");
    temperature = r.f32("temperature");
    top_k = r.i32("top_k");
    top_p = r.f32("top_p");
    min_p = r.f32("min_p");
    repetition_penalty = r.f32("repetition_penalty");
    presence_penalty = r.f32("presence_penalty");
    frequency_penalty = r.f32("frequency_penalty");
    logprobs = r.i32("logprobs");
    seed = r.u64("seed");
    stop_token_ids = r.i32s("stop_token_ids");
    stop_strings.resize(r.count("stop_strings", 4));
    for (std::string &s : stop_strings) {
        const uint32_t len = r.count("stop string length", 1);
        const unsigned char *p = r.take(len, "a stop string");
        s.assign(reinterpret_cast<const char *>(p), len);
    }
    prompt_logprobs = r.i32("prompt_logprobs");
    priority = r.i32("priority");
    n = r.i32("n");
    best_of = r.i32("best_of");
    beam_width = r.i32("beam_width");
    length_penalty = r.f32("length_penalty");
    early_stopping = r.i32("early_stopping");
    logit_bias.resize(r.count("logit_bias", 8));
    for (auto &[token, bias] : logit_bias) {
        token = r.i32("logit_bias token");
        bias = r.f32("logit_bias value");
    }
    min_tokens = r.i32("min_tokens");
    bad_words.resize(r.count("bad_words", 4));
    for (std::vector<int32_t> &word : bad_words) word = r.i32s("a bad word");
    allowed_token_ids = r.i32s("allowed_token_ids");
    constraint_kind = static_cast<grammar::ConstraintKind>(r.i32("constraint_kind"));
    const uint32_t len = r.count("constraint length", 1);
    const unsigned char *p = r.take(len, "the constraint");
    constraint_text.assign(reinterpret_cast<const char *>(p), len);
    constraint = nullptr;  // compiled by the engine that reads it
}

}  // namespace

std::vector<unsigned char> encode_intake(const StepIntake &intake) {
    Writer w;
    w.bytes.insert(w.bytes.end(), std::begin(kMagic), std::end(kMagic));
    w.u32(kIntakeWireVersion);
    w.u64(intake.step);
    w.u8(intake.stop ? 1 : 0);
    w.count(intake.submitted.size(), "submitted");
    for (const SubmittedRequest &req : intake.submitted) {
        w.u64(req.id);
        w.i32s(req.prompt, "prompt");
        write_config(w, req.config);
    }
    w.count(intake.aborted.size(), "aborted");
    for (uint64_t id : intake.aborted) w.u64(id);
    return std::move(w.bytes);
}

StepIntake decode_intake(std::span<const unsigned char> bytes) {
    Reader r(bytes);
    if (std::memcmp(r.take(sizeof kMagic, "magic"), kMagic, sizeof kMagic) != 0)
        throw Error(PAGODA_ERR_FORMAT, "intake: bad magic (not a step intake)");
    const uint32_t version = r.u32("version");
    if (version != kIntakeWireVersion)
        throw Error(PAGODA_ERR_FORMAT, "intake: version " + std::to_string(version) +
                                           ", this build reads version " +
                                           std::to_string(kIntakeWireVersion));
    StepIntake intake;
    intake.step = r.u64("step");
    const uint8_t stop = r.u8("stop flag");
    if (stop > 1)
        throw Error(PAGODA_ERR_FORMAT, "intake: stop flag " + std::to_string(stop) + ", not 0 or 1");
    intake.stop = stop == 1;
    intake.submitted.resize(r.count("submitted", kMinRequestBytes));
    for (SubmittedRequest &req : intake.submitted) {
        req.id = r.u64("request id");
        req.prompt = r.i32s("prompt");
        read_config(r, req.config);
    }
    intake.aborted.resize(r.count("aborted", 8));
    for (uint64_t &id : intake.aborted) id = r.u64("aborted id");
    if (r.left() != 0)
        throw Error(PAGODA_ERR_FORMAT, "intake: " + std::to_string(r.left()) +
                                           " trailing bytes after offset " +
                                           std::to_string(r.offset()));
    return intake;
}

}  // namespace pagoda::engine
