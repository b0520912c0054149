// CpuBackend's current device (DeviceScope), compiled into the test since it is internal to the
// plugin: kernels ask `cpu.pool()` and `cpu.threads()`, so each host thread must get its own
// device's pool, even while another host thread drives another device, and a pool's workers
// must see their own device from inside a chunk.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cpu_backend.hpp"

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

using pagoda::cpu::CpuBackend;
using pagoda::cpu::CpuConfig;
using pagoda::cpu::DeviceScope;

pagoda_backend_host_t quiet_host() {
    pagoda_backend_host_t host{};
    host.struct_size = sizeof host;
    host.abi_version = PAGODA_BACKEND_ABI_VERSION;
    return host;
}

CpuConfig config_of(std::vector<int> threads) {
    CpuConfig config;
    config.device_threads = std::move(threads);
    config.memory_per_device = 1 << 20;
    return config;
}

void test_scopes_nest(void **) {
    CpuBackend cpu(quiet_host(), config_of({3, 1, 2}));
    assert_int_equal(cpu.current_device(), 0);  // outside any scope: device 0
    assert_ptr_equal(&cpu.pool(), &cpu.device(0).pool);
    {
        DeviceScope outer(cpu, 1);
        assert_int_equal(cpu.threads(), 1);
        {
            DeviceScope inner(cpu, 2);
            assert_ptr_equal(&cpu.pool(), &cpu.device(2).pool);
            assert_int_equal(cpu.threads(), 2);
        }
        assert_int_equal(cpu.current_device(), 1);
        // Another instance's scope says nothing about this one's devices.
        CpuBackend other(quiet_host(), config_of({1, 1}));
        DeviceScope elsewhere(other, 1);
        assert_int_equal(cpu.current_device(), 0);
        assert_int_equal(other.current_device(), 1);
    }
    assert_int_equal(cpu.current_device(), 0);
}

// Runs `jobs` parallel_fors on `device` from this thread, recording which threads ran chunks;
// false if any chunk saw another device's pool or thread count.
bool drive(CpuBackend &cpu, int32_t device, int jobs, std::set<std::thread::id> &ran) {
    DeviceScope scope(cpu, device);
    std::mutex mutex;
    std::atomic<bool> ok{&cpu.pool() == &cpu.device(device).pool};
    const int threads = cpu.device(device).pool.threads();
    for (int j = 0; j < jobs; ++j)
        cpu.pool().parallel_for(64, 1, [&](int64_t, int64_t) {
            if (cpu.current_device() != device || cpu.threads() != threads) ok = false;
            std::lock_guard<std::mutex> lock(mutex);
            ran.insert(std::this_thread::get_id());
        });
    return ok.load();
}

void test_each_host_thread_its_own_pool(void **) {
    CpuBackend cpu(quiet_host(), config_of({3, 1, 2}));
    std::set<std::thread::id> ran[3];
    std::atomic<bool> ok{true};
    std::thread::id single_caller;
    std::vector<std::thread> hosts;
    for (int32_t d = 0; d < 3; ++d)
        hosts.emplace_back([&, d] {
            if (d == 1) single_caller = std::this_thread::get_id();
            if (!drive(cpu, d, 2000, ran[d])) ok = false;
        });
    for (std::thread &h : hosts) h.join();
    assert_true(ok.load());
    // Each device's chunks ran on its caller and its own workers only: no thread served two.
    assert_true(ran[0].size() <= 3 && ran[2].size() <= 2);
    assert_int_equal(ran[1].size(), 1);  // a 1-thread device runs everything on the caller
    assert_true(*ran[1].begin() == single_caller);
    for (int a = 0; a < 3; ++a)
        for (int b = a + 1; b < 3; ++b)
            for (const std::thread::id &id : ran[a]) assert_int_equal(ran[b].count(id), 0);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scopes_nest),
        cmocka_unit_test(test_each_host_thread_its_own_pool),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
