// A fixed set of worker threads that split index ranges among themselves and the caller.
//
// A decode step of a small model runs hundreds of short parallel ops; waking a sleeping worker
// through the kernel costs microseconds each time. So a worker that has just finished a job
// watches for the next one for a short while (kSpinMicros) before it sleeps, and a caller
// watches for its job's end the same way; the condition variables are used, and the kernel
// entered, only once the watching has run out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace pagoda::cpu {

class ThreadPool {
public:
    // `threads` counts the calling thread too: a pool of 1 runs everything on the caller.
    // `on_worker_start`, if set, runs first on each worker thread (the CPU backend marks its
    // workers as its device's, so a nested kernel call asks the right pool; cpu_backend.hpp).
    explicit ThreadPool(int threads, std::function<void()> on_worker_start = {});
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

    // Calls fn(begin, end) over [0, n) in chunks of at least `grain` indices, on all threads, and
    // returns when every chunk is done. A call from inside a chunk (nesting) or a range of one
    // chunk runs on the caller alone. Calls from several host threads take turns.
    template <typename Fn>
    void parallel_for(int64_t n, int64_t grain, Fn &&fn) {
        if (n <= 0) return;
        auto thunk = [](void *ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<Fn> *>(ctx))(b, e); };
        run(n, grain, thunk, const_cast<void *>(static_cast<const void *>(&fn)));
    }

private:
    using Thunk = void (*)(void *, int64_t, int64_t);
    void run(int64_t n, int64_t grain, Thunk thunk, void *ctx);
    void worker_loop();
    void work_on_current_job();

    // Returns once `ready()`: watches for it first, then sleeps on `cv`, counted in `sleepers`
    // so that wake_sleepers knows to notify.
    template <typename Ready>
    void await(Ready &&ready, std::condition_variable &cv, std::atomic<int> &sleepers);
    void wake_sleepers(std::condition_variable &cv, std::atomic<int> &sleepers);

    std::vector<std::thread> workers_;
    std::mutex submit_mutex_;  // one job at a time
    std::mutex mutex_;         // for the condition variables' sleeps
    std::condition_variable wake_;
    std::condition_variable done_;
    // Every flag below is sequentially consistent: a worker raises active_workers_ and then
    // reads job_open_, the caller lowers job_open_ and then reads active_workers_, so a worker
    // that comes late either sees the job closed or is waited for (never joins the next job
    // with this one's counters). The same holds for the sleeper counts and what they wait on,
    // so no wake-up is lost.
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> job_open_{false};    // workers may join the current job
    std::atomic<int> active_workers_{0};  // workers inside the current job
    std::atomic<int> sleeping_workers_{0};
    std::atomic<int> sleeping_callers_{0};
    std::atomic<bool> stopping_{false};

    // The current job; written before job_open_ rises (and generation_ advances), so a worker
    // that sees the job open reads it whole.
    Thunk thunk_ = nullptr;
    void *ctx_ = nullptr;
    int64_t n_ = 0;
    int64_t chunk_ = 1;
    int64_t n_chunks_ = 0;
    std::atomic<int64_t> next_chunk_{0};
    std::atomic<int64_t> chunks_left_{0};
};

// Rows per parallel_for chunk so that a chunk touches at least `min_elems` elements: smaller
// chunks cost more in hand-off than they gain. A whole launch below that runs on the caller alone.
inline int64_t rows_per_chunk(int64_t row_len, int64_t min_elems = 16384) {
    return row_len >= min_elems ? 1 : (min_elems + row_len - 1) / row_len;
}

}  // namespace pagoda::cpu
