// An engine on a mesh over several processes: every rank runs the same engine and schedules the
// same steps, fed by rank 0. Rank 0 alone takes submissions and aborts; at each step it
// broadcasts what arrived since the last one (intake_wire.hpp), every rank applies it in the same
// order, and the logits of the step reach every rank (MeshExecutor), so that each samples the
// same tokens. The followers' hosts call follow(), which steps as rank 0 steps until rank 0's
// engine goes away. (vLLM's external launcher also has every rank schedule; here rank 0 feeds
// them, so their hosts need not submit alike.)
#include <algorithm>

#include "common/error.hpp"
#include "engine/engine.hpp"
#include "engine/intake_wire.hpp"

namespace pagoda::engine {

void Engine::exchange_intake(std::vector<std::unique_ptr<Request>> &batch, std::vector<uint64_t> &aborts) {
    std::vector<unsigned char> bytes;
    if (!follower()) {
        StepIntake intake;
        intake.step = step_index_;
        for (const auto &r : batch)
            intake.submitted.push_back({r->id, r->live.front()->tokens, r->config});
        intake.aborted = aborts;
        bytes = encode_intake(intake);
    }
    processes_->broadcast_bytes(bytes, 0);
    ++step_index_;
    if (!follower()) return;
    StepIntake intake = decode_intake(bytes);
    if (intake.step != step_index_ - 1)
        throw Error(PAGODA_ERR_INTERNAL, "rank " + std::to_string(processes_->rank()) + " is at step " +
                                             std::to_string(step_index_ - 1) + " but rank 0 at step " +
                                             std::to_string(intake.step));
    if (intake.stop) {
        stopped_ = true;
        return;
    }
    for (SubmittedRequest &s : intake.submitted) {
        std::unique_ptr<Request> r = make_request(s.prompt, std::move(s.config));
        r->id = s.id;
        ++live_requests_;
        batch.push_back(std::move(r));
    }
    aborts = std::move(intake.aborted);
}

void Engine::apply_aborts(const std::vector<uint64_t> &aborts) {
    for (uint64_t id : aborts) {
        auto it = requests_.find(id);
        if (it == requests_.end()) continue;  // it ended on its own before the abort came
        for (Output &out : end_request(*it->second, PAGODA_FINISH_ABORTED)) emit(std::move(out));
        remove(it->second.get(), PAGODA_FINISH_ABORTED);
    }
    publish_queue_sizes();
}

void Engine::announce_stop() noexcept {
    try {
        std::lock_guard lock(step_mutex_);
        StepIntake intake;
        intake.step = step_index_++;
        intake.stop = true;
        std::vector<unsigned char> bytes = encode_intake(intake);
        processes_->broadcast_bytes(bytes, 0);
    } catch (...) {
        // The followers are gone already, or the mesh failed: they have stopped either way.
    }
}

void Engine::follow() {
    if (!follower())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    processes_ == nullptr ? "follow: the engine's mesh is in one process; step it instead"
                                          : "follow: this engine is rank 0, which leads: submit and step it");
    while (!stopped_) step();
}

}  // namespace pagoda::engine
