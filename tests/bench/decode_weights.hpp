// What one decode step reads of a model's weights, for pagoda-bench-generate's bandwidth
// figures: every dense matrix once per step, and of a mixture of experts' MLPs only the experts
// the step's tokens were routed to (MOE_MATMUL groups a step's tokens by expert, so an expert is
// read once however many tokens picked it, and an unpicked one not at all).
#pragma once

#include <cstdint>
#include <string>

#include "pagoda/model.h"

namespace pagoda::bench {

// How many of the E experts of a sparse layer a step of `batch` tokens reads, expected under
// uniform routing (each token's top k a uniformly random k-subset, tokens independent): an
// expert escapes one token with probability 1 − k/E, so E·(1 − (1 − k/E)^B) are read. The
// engine does not say which experts it picked, so the expectation stands in for the count. A
// random-weight router routes close to uniformly: a numpy forward pass of the random moe32
// model, 16 greedy decodes over 11 steps, picked 27.6 distinct experts per layer and step (25 to
// 30) against the expectation's 28.2. A trained router is less even (fewer distinct experts at
// B > 1, so bytes over-counted). k at B = 1; tends to E as B grows.
double expected_distinct_experts(const pagoda_model_info_t &m, int batch);

// Weights (parameters; times bytes per weight for bytes) one decode step of `batch` tokens reads.
struct StepWeights {
    double active = 0.0;            // what the step reads: the expected experts only
    double total = 0.0;             // every weight a step could read: all experts
    double distinct_experts = 0.0;  // per sparse layer, expected; 0 for a dense model
};

// Every layer's attention matrices and norms, its MLP (dense, or the router and the expected
// distinct experts), the final norm and the LM head (the embedding table is only gathered, a row
// per token, so it does not count unless tied to the LM head, which is then counted once as the
// head). Multiply-adds per token are 2 · active at batch 1 (each token through its k experts).
StepWeights weights_read_per_step(const pagoda_model_info_t &m, int batch);

}  // namespace pagoda::bench
