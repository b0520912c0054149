#include "thread_pool.hpp"

#include <algorithm>

namespace pagoda::cpu {

namespace {
// Set on pool workers and on a caller while it runs chunks, so nested calls run inline.
thread_local bool t_inside_pool = false;
}  // namespace

ThreadPool::ThreadPool(int threads, std::function<void()> on_worker_start) {
    for (int i = 1; i < std::max(threads, 1); ++i)
        workers_.emplace_back([this, on_worker_start] {
            if (on_worker_start) on_worker_start();
            worker_loop();
        });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
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
    {
        std::lock_guard<std::mutex> lock(mutex_);
        thunk_ = thunk;
        ctx_ = ctx;
        n_ = n;
        chunk_ = (n + n_chunks - 1) / n_chunks;
        n_chunks_ = (n + chunk_ - 1) / chunk_;
        next_chunk_.store(0);
        chunks_left_.store(n_chunks_);
        ++generation_;
        job_open_ = true;
    }
    wake_.notify_all();
    t_inside_pool = true;
    work_on_current_job();
    t_inside_pool = false;
    std::unique_lock<std::mutex> lock(mutex_);
    // Waiting for the workers that joined to leave, then closing the job under the same lock,
    // keeps a worker that wakes late from joining a finished job: it would otherwise claim
    // chunks of the next job with this one's counters (running a chunk twice, or driving
    // chunks_left_ below zero so that the caller waits forever).
    done_.wait(lock, [this] { return chunks_left_.load() == 0 && active_workers_ == 0; });
    job_open_ = false;
}

void ThreadPool::work_on_current_job() {
    for (;;) {
        const int64_t c = next_chunk_.fetch_add(1);
        if (c >= n_chunks_) return;
        const int64_t begin = c * chunk_;
        thunk_(ctx_, begin, std::min(n_, begin + chunk_));
        if (chunks_left_.fetch_sub(1) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);
            done_.notify_all();
        }
    }
}

void ThreadPool::worker_loop() {
    t_inside_pool = true;
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || (job_open_ && generation_ != seen); });
            if (stopping_) return;
            seen = generation_;
            ++active_workers_;
        }
        work_on_current_job();
        std::lock_guard<std::mutex> lock(mutex_);
        if (--active_workers_ == 0) done_.notify_all();
    }
}

}  // namespace pagoda::cpu
