#include "server/engine_driver.hpp"

#include "common/error.hpp"
#include "common/log.hpp"

namespace pagoda::server {

EngineDriver::EngineDriver(EnginePort &engine, std::function<void()> on_progress, std::function<void()> on_failed)
    : engine_(engine), on_progress_(std::move(on_progress)), on_failed_(std::move(on_failed)) {
    thread_ = std::thread([this] { run(); });
}

EngineDriver::~EngineDriver() { stop(); }

void EngineDriver::wake() {
    {
        std::lock_guard lock(mutex_);
        woken_ = true;
    }
    cv_.notify_one();
}

void EngineDriver::abort(uint64_t request_id) {
    {
        std::lock_guard lock(mutex_);
        aborts_.push_back(request_id);
    }
    cv_.notify_one();
}

void EngineDriver::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
}

void EngineDriver::run() {
    std::vector<uint64_t> aborts;
    for (;;) {
        bool stopping;
        {
            std::unique_lock lock(mutex_);
            // has_work() is read under no lock: a submission sets woken_ after it, so a wake-up
            // is never lost.
            cv_.wait(lock, [&] {
                return stopping_ || woken_ || !aborts_.empty() || (!failed_ && engine_.has_work());
            });
            woken_ = false;
            aborts.swap(aborts_);
            stopping = stopping_;
        }
        for (uint64_t id : aborts) engine_.abort(id);  // NOT_FOUND: it ended already
        if (!aborts.empty()) on_progress_();
        aborts.clear();
        if (stopping) return;
        if (!failed_ && engine_.has_work()) {
            if (engine_.step() != PAGODA_OK) {
                log(PAGODA_LOG_ERROR, std::string("server: an engine step failed: ") + last_error());
                if (const std::string why = engine_.failed_for_good(); !why.empty()) {
                    log(PAGODA_LOG_ERROR, "server: stopping, since the engine can take no more steps: " + why);
                    failed_ = true;
                    on_failed_();
                }
            }
            on_progress_();
        }
    }
}

}  // namespace pagoda::server
