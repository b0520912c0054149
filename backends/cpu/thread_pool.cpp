#include "thread_pool.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace pagoda::cpu {

namespace {

// Set on pool workers and on a caller while it runs chunks, so nested calls run inline.
thread_local bool t_inside_pool = false;

// How long a thread watches for work (or a job's end) before sleeping. Long enough to span the
// serial work between two ops of a decode step; short enough that an idle engine's workers are
// asleep almost at once.
constexpr auto kSpinMicros = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

}  // namespace

template <typename Ready>
void ThreadPool::await(Ready &&ready, std::condition_variable &cv, std::atomic<int> &sleepers) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinMicros;
    for (int i = 0; !ready(); ++i) {
        cpu_relax();
        // The clock is read every 64 turns: often enough for the budget, rarely enough to
        // stay off the memory bus.
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleepers.fetch_add(1);
            cv.wait(lock, ready);
            sleepers.fetch_sub(1);
            return;
        }
    }
}

void ThreadPool::wake_sleepers(std::condition_variable &cv, std::atomic<int> &sleepers) {
    if (sleepers.load() == 0) return;
    // Taking the mutex orders this notify after a sleeper's check of its condition.
    { std::lock_guard<std::mutex> lock(mutex_); }
    cv.notify_all();
}

ThreadPool::ThreadPool(int threads, std::function<void()> on_worker_start) {
    for (int i = 1; i < std::max(threads, 1); ++i)
        workers_.emplace_back([this, on_worker_start] {
            if (on_worker_start) on_worker_start();
            worker_loop();
        });
}

ThreadPool::~ThreadPool() {
    stopping_.store(true);
    wake_sleepers(wake_, sleeping_workers_);
    for (auto &w : workers_) w.join();
}

void ThreadPool::run(int64_t n, int64_t grain, Thunk thunk, void *ctx) {
    grain = std::max<int64_t>(grain, 1);
    const int64_t max_chunks = (n + grain - 1) / grain;
    if (t_inside_pool || workers_.empty() || max_chunks <= 1) {
        thunk(ctx, 0, n);
        return;
    }
    std::lock_guard<std::mutex> submit(submit_mutex_);
    // A few chunks per thread balance uneven work without much claiming traffic.
    const int64_t n_chunks = std::min<int64_t>(max_chunks, int64_t(threads()) * 4);
    thunk_ = thunk;
    ctx_ = ctx;
    n_ = n;
    chunk_ = (n + n_chunks - 1) / n_chunks;
    n_chunks_ = (n + chunk_ - 1) / chunk_;
    next_chunk_.store(0);
    chunks_left_.store(n_chunks_);
    job_open_.store(true);
    generation_.fetch_add(1);  // publishes the job to watching workers
    wake_sleepers(wake_, sleeping_workers_);

    t_inside_pool = true;
    work_on_current_job();
    t_inside_pool = false;

    // Every chunk done, then the job closed, then every worker that joined gone: a worker that
    // comes late sees the job closed and leaves without touching its counters.
    await([this] { return chunks_left_.load() == 0; }, done_, sleeping_callers_);
    job_open_.store(false);
    await([this] { return active_workers_.load() == 0; }, done_, sleeping_callers_);
}

void ThreadPool::work_on_current_job() {
    for (;;) {
        const int64_t c = next_chunk_.fetch_add(1);
        if (c >= n_chunks_) return;
        const int64_t begin = c * chunk_;
        thunk_(ctx_, begin, std::min(n_, begin + chunk_));
        if (chunks_left_.fetch_sub(1) == 1) wake_sleepers(done_, sleeping_callers_);
    }
}

void ThreadPool::worker_loop() {
    t_inside_pool = true;
    uint64_t seen = 0;
    for (;;) {
        await([&] { return stopping_.load() || (job_open_.load() && generation_.load() != seen); }, wake_,
              sleeping_workers_);
        if (stopping_.load()) return;
        const uint64_t job = generation_.load();
        active_workers_.fetch_add(1);
        if (job_open_.load() && generation_.load() == job) work_on_current_job();
        seen = job;
        if (active_workers_.fetch_sub(1) == 1) wake_sleepers(done_, sleeping_callers_);
    }
}

}  // namespace pagoda::cpu
