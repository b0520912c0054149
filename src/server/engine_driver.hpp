// One thread per served engine: it steps the engine (EnginePort::step) while the engine has
// work and sleeps on a condition variable otherwise. The loop thread submits directly (submit is
// thread-safe) and wakes it; aborts are handed over too, since an abort waits for a running step
// and the loop thread must not block. After each step `on_progress` runs (the server's
// uv_async_send), and the loop thread polls the outputs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/engine_port.hpp"

namespace pagoda::server {

class EngineDriver {
public:
    // `engine` outlives the driver (the served model holds both). `on_failed` is called (on the
    // driver's thread, once) when the engine has failed for good; the driver then steps no more.
    EngineDriver(EnginePort &engine, std::function<void()> on_progress, std::function<void()> on_failed);
    ~EngineDriver();  // stops and joins
    EngineDriver(const EngineDriver &) = delete;
    EngineDriver &operator=(const EngineDriver &) = delete;

    // Thread-safe: new work was submitted.
    void wake();
    // Thread-safe: abort `request_id` on the driver thread (unknown ids are ignored).
    void abort(uint64_t request_id);
    // Joins the thread; pending aborts run first. Idempotent.
    void stop();

private:
    void run();

    EnginePort &engine_;
    std::function<void()> on_progress_;
    std::function<void()> on_failed_;
    bool failed_ = false;  // driver thread only
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stopping_ = false;
    bool woken_ = false;
    std::vector<uint64_t> aborts_;
    std::thread thread_;
};

}  // namespace pagoda::server
