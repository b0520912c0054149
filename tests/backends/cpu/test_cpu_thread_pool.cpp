// The CPU backend's thread pool under many tiny jobs, from one caller and from several: every
// index of every job runs exactly once and no job waits forever. Tiny jobs are where a worker
// that wakes late meets the next job; that race once ran a chunk twice and hung the caller
// (seen as a serving benchmark frozen after hours). A hang here ends in CTest's timeout.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "thread_pool.hpp"

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

using pagoda::cpu::ThreadPool;

// `jobs` jobs of 1–64 indices, each index counted; returns false at the first miscount.
bool run_jobs(ThreadPool &pool, int jobs, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::atomic<int>> hits(64);
    for (int j = 0; j < jobs; ++j) {
        const int64_t n = 1 + int64_t(rng() % 64);
        for (int64_t i = 0; i < n; ++i) hits[size_t(i)].store(0);
        pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
            if (hits[size_t(i)].load() != 1) return false;
    }
    return true;
}

void test_each_index_once(void **) {
    for (int threads : {2, 3, 4}) {
        ThreadPool pool(threads);
        assert_int_equal(pool.threads(), threads);
        assert_true(run_jobs(pool, 100000, unsigned(threads)));
    }
}

void test_callers_take_turns(void **) {
    ThreadPool pool(3);
    std::atomic<bool> ok{true};
    std::vector<std::thread> callers;
    for (unsigned c = 0; c < 3; ++c)
        callers.emplace_back([&, c] {
            if (!run_jobs(pool, 20000, 100 + c)) ok = false;
        });
    for (std::thread &t : callers) t.join();
    assert_true(ok.load());
}

// Jobs spaced further apart than a worker watches for the next one: every job then finds its
// workers asleep in the kernel, and must wake them (a lost wake-up would leave the caller doing
// every chunk alone, or, with a chunk claimed and unfinished, waiting forever). Spacings around
// the watch time meet workers on their way to sleep; the last spacing lets a pool go idle with
// its workers asleep and be destroyed that way.
void test_sleeping_workers_wake(void **) {
    ThreadPool pool(3);
    std::atomic<int> on_workers{0};
    const auto caller = std::this_thread::get_id();
    for (int gap_us : {0, 20, 45, 50, 55, 80, 200, 1000}) {
        for (int j = 0; j < 40; ++j) {
            std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
            std::vector<std::atomic<int>> hits(48);
            pool.parallel_for(48, 1, [&](int64_t begin, int64_t end) {
                if (std::this_thread::get_id() != caller) on_workers.fetch_add(1);
                // Long enough that the workers, once awake, take chunks before the caller ends.
                std::this_thread::sleep_for(std::chrono::microseconds(50));
                for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
            });
            for (auto &h : hits) assert_int_equal(h.load(), 1);
        }
    }
    assert_true(on_workers.load() > 0);  // the workers took part, asleep or not
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void test_nested_and_single_thread(void **) {
    ThreadPool pool(2);
    std::atomic<int64_t> sum{0};
    pool.parallel_for(8, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)  // a nested call runs inline on this thread
            pool.parallel_for(4, 1, [&](int64_t b, int64_t e) { sum += (e - b) * (i + 1); });
    });
    assert_int_equal(sum.load(), 4 * 36);
    ThreadPool alone(1);
    assert_true(run_jobs(alone, 1000, 7));
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_index_once),
        cmocka_unit_test(test_callers_take_turns),
        cmocka_unit_test(test_sleeping_workers_wake),
        cmocka_unit_test(test_nested_and_single_thread),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
