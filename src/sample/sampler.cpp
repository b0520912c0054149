// The sampler's pipeline, in vLLM's order: raw log-probabilities, the request's logit controls
// and processor, penalties, then greedy or temperature -> top-k -> top-p -> min-p -> one seeded
// draw.
#include "sample/sampler.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "sample/logprobs.hpp"
#include "sample/penalties.hpp"
#include "sample/top_select.hpp"

namespace pagoda::sample {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A token still in the running, with its weight exp((logit - max) / T): the probability up to a
// common factor, and exactly p_i / p_max, which is what min-p compares.
struct Candidate {
    float logit;
    int32_t token;
    float weight;
};

ScoredToken rank_key(const Candidate &c) { return {c.logit, c.token}; }

// Row-sized buffers reused from token to token, one set per thread, so the hot path allocates
// only until the largest vocabulary has been seen once.
struct Scratch {
    std::vector<ScoredToken> ranked;
    std::vector<Candidate> candidates;
    std::vector<Candidate> nucleus;
    std::vector<double> bin_mass;
    std::vector<float> raw_seen;
    std::vector<float> raw_row;  // the row before the controls, when they change values
    std::vector<float> kept;     // allowed_token_ids' logits while the row is masked
};

Scratch &thread_scratch() {
    thread_local Scratch scratch;
    return scratch;
}

[[noreturn]] void bad_param(const std::string &field, double value, const char *rule) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                "sampling parameter " + field + " = " + std::to_string(value) + " " + rule);
}

// The lowest id among the largest logits, so greedy decoding is deterministic.
int32_t argmax(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return int32_t(best);
}

// Weights lie in (0, 1]. For positive floats the bit pattern orders like the value, so its top
// bits (exponent and 3 mantissa bits) cut the weights into bins eight per octave, in rank order.
constexpr int kWeightBinShift = 20;
constexpr size_t kWeightBins = (std::bit_cast<uint32_t>(1.0f) >> kWeightBinShift) + 1;

size_t weight_bin(float weight) { return std::bit_cast<uint32_t>(weight) >> kWeightBinShift; }

// Ranks after every candidate: "keep them all".
constexpr ScoredToken kKeepAll = {-kInf, std::numeric_limits<int32_t>::max()};

// Which candidates top-p keeps when they are not in rank order: the key of the last token of the
// nucleus (the smallest rank-order prefix whose weight reaches `target`). Without sorting the
// row: one pass sums the weight per bin, walking the bins down finds the bin where the mass
// crosses `target`, and only that bin's tokens are sorted. Tokens below `min_weight` (min-p) are
// left out up front: they would be dropped afterwards anyway, and the nucleus is a rank prefix,
// so leaving them out changes nothing but the work.
ScoredToken nucleus_boundary(const std::vector<Candidate> &candidates, double target,
                             float min_weight, Scratch &scratch) {
    std::vector<double> &bin_mass = scratch.bin_mass;
    bin_mass.assign(kWeightBins, 0.0);
    for (const Candidate &c : candidates)
        if (c.weight >= min_weight) bin_mass[weight_bin(c.weight)] += double(c.weight);

    double mass_above = 0.0;  // of the bins above the boundary bin, all inside the nucleus
    size_t boundary = kWeightBins;
    for (size_t bin = kWeightBins; bin-- > 0;) {
        if (mass_above + bin_mass[bin] >= target) {
            boundary = bin;
            break;
        }
        mass_above += bin_mass[bin];
    }
    // Rounding left the mass a hair short: the whole (min-p filtered) set is the nucleus.
    if (boundary == kWeightBins) return kKeepAll;

    std::vector<Candidate> &nucleus = scratch.nucleus;
    nucleus.clear();
    for (const Candidate &c : candidates)
        if (c.weight >= min_weight && weight_bin(c.weight) == boundary) nucleus.push_back(c);
    std::sort(nucleus.begin(), nucleus.end(), [](const Candidate &a, const Candidate &b) {
        return ranks_before(rank_key(a), rank_key(b));
    });
    double mass = mass_above;
    for (const Candidate &c : nucleus) {
        mass += double(c.weight);
        if (mass >= target) return rank_key(c);
    }
    return rank_key(nucleus.back());  // the bin's sum, added in another order, fell just short
}

// Σ weight in double, in four partial sums: one running sum would make every add wait for the
// previous one (twice as slow on a 150k row).
double total_weight(const std::vector<Candidate> &cands) {
    double sums[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = 0;
    for (; i + 4 <= cands.size(); i += 4)
        for (size_t lane = 0; lane < 4; ++lane) sums[lane] += double(cands[i + lane].weight);
    for (; i < cands.size(); ++i) sums[0] += double(cands[i].weight);
    return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

// Fills scratch.candidates with the tokens that survive top-k, top-p and min-p on the penalised
// `logits`, in a canonical order (rank order after top-k, else id order), and returns their
// total weight. Canonical order matters: the draw walks the candidates, and the same seed must
// pick the same token whatever the standard library's selection algorithms do.
double build_candidates(std::span<const float> logits, const SamplingParams &params,
                        Scratch &scratch) {
    std::vector<Candidate> &cands = scratch.candidates;
    cands.clear();
    const bool top_k = params.top_k > 0 && size_t(params.top_k) < logits.size();
    if (top_k) {
        select_best(logits, size_t(params.top_k), scratch.ranked);
        for (const ScoredToken &s : scratch.ranked)
            if (s.score > -kInf) cands.push_back({s.score, s.token, 0.0f});
    } else {
        cands.reserve(logits.size());
        for (size_t i = 0; i < logits.size(); ++i)
            if (logits[i] > -kInf) cands.push_back({logits[i], int32_t(i), 0.0f});
    }
    if (cands.empty())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "every one of the " + std::to_string(logits.size()) +
                        " logits is -inf after the penalties");

    float max_logit = -kInf;
    for (const Candidate &c : cands) max_logit = std::max(max_logit, c.logit);
    const float inv_temperature = 1.0f / params.temperature;
    for (Candidate &c : cands) c.weight = std::exp((c.logit - max_logit) * inv_temperature);
    const double total = total_weight(cands);

    // Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration" §3.1: keep the
    // smallest set of most likely tokens whose probability reaches top_p (never empty).
    if (params.top_p < 1.0f) {
        const double target = double(params.top_p) * total;
        if (top_k) {
            // Already in rank order: the nucleus is a prefix.
            double mass = 0.0;
            size_t keep = 0;
            while (keep < cands.size() && mass < target) mass += double(cands[keep++].weight);
            cands.resize(std::max<size_t>(keep, 1));
        } else {
            const ScoredToken last = nucleus_boundary(cands, target, params.min_p, scratch);
            std::erase_if(cands, [&](const Candidate &c) {
                return ranks_before(last, rank_key(c));
            });
        }
    }

    // Min-p (Nguyen et al. 2024, "Turning Up the Heat"): drop p_i < min_p * p_max, that is
    // weight < min_p. Also drops weights that underflowed to 0, which can never be drawn.
    // erase_if keeps the survivors' order.
    const float min_weight = params.min_p;
    std::erase_if(cands, [&](const Candidate &c) { return c.weight < min_weight || c.weight <= 0; });

    return total_weight(cands);
}

// Inverse-CDF draw over the candidates in their canonical order.
int32_t draw(const std::vector<Candidate> &cands, double total, Rng &rng) {
    const double target = uniform_unit(rng) * total;
    double mass = 0.0;
    for (const Candidate &c : cands) {
        mass += double(c.weight);
        if (target < mass) return c.token;
    }
    return cands.back().token;  // rounding put target at the very top
}

// The request's controls, then its processor. Returns true when it copied the raw row into
// scratch.raw_row (the chosen token's raw logit is read there afterwards).
bool control_row(std::span<float> logits, const RowControls &rc, const TokenHistory &history,
                 Scratch &scratch) {
    // The mask changes no logit it keeps, so it alone needs no copy of the raw row.
    if (rc.mask) rc.mask.fn(rc.mask.context, logits);
    const bool controls = rc.controls != nullptr && rc.controls->active();
    if (!controls && !rc.processor) return false;
    scratch.raw_row.assign(logits.begin(), logits.end());
    if (controls)
        apply_logit_controls(logits, *rc.controls, history.output(), rc.min_tokens_stop_ids,
                             scratch.kept);
    bool any = false;
    if (rc.processor) {
        const int32_t code = rc.processor.fn(rc.processor.context, logits);
        if (code != 0) throw ProcessorStopped{code};
        for (size_t i = 0; i < logits.size(); ++i) {
            if (std::isnan(logits[i]) || logits[i] == kInf)
                throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                            "the logits processor wrote " + std::to_string(logits[i]) +
                                " at token " + std::to_string(i) + " (NaN and +inf are refused)");
            any = any || logits[i] > -kInf;
        }
    } else {
        any = std::any_of(logits.begin(), logits.end(), [](float x) { return x > -kInf; });
    }
    if (!any)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "no token can be sampled: the constraint, logit_bias, min_tokens, bad_words, "
                    "allowed_token_ids and the logits processor leave every logit -inf");
    return true;
}

}  // namespace

void validate_params(const SamplingParams &p) {
    if (!(std::isfinite(p.temperature) && p.temperature >= 0.0f))
        bad_param("temperature", p.temperature, "must be finite and >= 0");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad_param("top_p", p.top_p, "must be in (0, 1]");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad_param("min_p", p.min_p, "must be in [0, 1]");
    if (!(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.0f))
        bad_param("repetition_penalty", p.repetition_penalty, "must be finite and > 0");
    if (!std::isfinite(p.presence_penalty))
        bad_param("presence_penalty", p.presence_penalty, "must be finite");
    if (!std::isfinite(p.frequency_penalty))
        bad_param("frequency_penalty", p.frequency_penalty, "must be finite");
    if (p.logprobs < -1) bad_param("logprobs", p.logprobs, "must be >= -1 (-1 = none)");
}

SampleResult sample(std::span<float> logits, const SamplingParams &params,
                    const TokenHistory &history, Rng &rng) {
    return sample(logits, params, history, rng, RowControls{});
}

SampleResult sample(std::span<float> logits, const SamplingParams &params,
                    const TokenHistory &history, Rng &rng, const RowControls &row_controls) {
    validate_params(params);
    Scratch &scratch = thread_scratch();
    SampleResult result;

    // Log-probabilities describe the model, so they come from the raw row, before anything
    // below changes it.
    const double log_norm = log_normalizer(logits);
    if (params.logprobs > 0)
        top_logprobs_into(logits, size_t(params.logprobs), log_norm, scratch.ranked, result.top);

    const bool controlled = control_row(logits, row_controls, history, scratch);
    const bool penalised = apply_penalties(logits, params, history, scratch.raw_seen);
    if (params.temperature == 0.0f) {
        // Greedy: top-k, top-p and min-p all keep the most likely token, so they cannot matter.
        result.token = argmax(logits);
    } else {
        const double total = build_candidates(logits, params, scratch);
        result.token = draw(scratch.candidates, total, rng);
    }

    float raw_logit = logits[size_t(result.token)];
    if (controlled) {
        raw_logit = scratch.raw_row[size_t(result.token)];
    } else if (penalised) {
        const int64_t pos = history.seen_position(result.token);
        if (pos >= 0) raw_logit = scratch.raw_seen[size_t(pos)];
    }
    result.logprob = float(double(raw_logit) - log_norm);
    return result;
}

std::vector<TokenProbability> filtered_distribution(std::span<float> logits,
                                                    const SamplingParams &params,
                                                    const TokenHistory &history,
                                                    const RowControls &row_controls) {
    validate_params(params);
    log_normalizer(logits);  // the same checks of the row as sample()
    Scratch &scratch = thread_scratch();
    control_row(logits, row_controls, history, scratch);
    apply_penalties(logits, params, history, scratch.raw_seen);
    if (params.temperature == 0.0f) return {{argmax(logits), 1.0}};
    const double total = build_candidates(logits, params, scratch);
    std::vector<TokenProbability> out;
    out.reserve(scratch.candidates.size());
    for (const Candidate &c : scratch.candidates)
        out.push_back({c.token, double(c.weight) / total});
    return out;
}

}  // namespace pagoda::sample
