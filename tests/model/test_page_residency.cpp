// page_residency: dropping the pages of a model's mapping that no device reads, on the random
// f16 model in both formats. The resident set shrinks by what was dropped, and the dropped
// tensors read back unchanged (the pages return from the file).
#include "model/page_residency.hpp"

#include <fstream>
#include <string>

#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;

namespace {

// This process's resident set in bytes (VmRSS).
uint64_t resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string key;
    uint64_t kb = 0;
    while (status >> key) {
        if (key == "VmRSS:") {
            status >> kb;
            return kb * 1024;
        }
    }
    fail_msg("no VmRSS in /proc/self/status");
    return 0;
}

uint64_t checksum(const Model &m) {
    uint64_t h = 1469598103934665603ull;
    for (const auto &[name, t] : m.tensors().all())
        for (uint64_t i = 0; i < t.bytes; i += 97) h = (h ^ static_cast<const unsigned char *>(t.data)[i]) * 1099511628211ull;
    return h;
}

void release_all_but_layer_zero(const std::string &path) {
    const std::shared_ptr<const Model> m = open_model(path, {}, nullptr);
    const uint64_t before_sum = checksum(*m);
    std::vector<ByteRange> used;
    uint64_t used_bytes = 0;
    for (const auto &[name, t] : m->tensors().all()) {
        if (name.rfind("model.layers.0.", 0) != 0) continue;
        const auto *p = static_cast<const unsigned char *>(t.data);
        used.push_back({p, p + t.bytes});
        used_bytes += t.bytes;
    }
    assert_true(used_bytes > 0);
    const uint64_t before = resident_bytes();
    const uint64_t dropped = release_unused_pages(*m, used);
    const uint64_t after = resident_bytes();
    std::printf("  %s: dropped %llu of %llu unused bytes; resident %llu -> %llu\n", path.c_str(),
                (unsigned long long)dropped, (unsigned long long)(m->weight_bytes() - used_bytes),
                (unsigned long long)before, (unsigned long long)after);
    // Only pages at tensor boundaries shared with used bytes stay.
    assert_true(double(dropped) >= 0.9 * double(m->weight_bytes() - used_bytes));
    assert_true(double(before - after) >= 0.9 * double(dropped));
    // Nothing used was dropped twice over: releasing again with everything used drops nothing.
    std::vector<ByteRange> everything;
    for (const auto &[name, t] : m->tensors().all()) {
        const auto *p = static_cast<const unsigned char *>(t.data);
        everything.push_back({p, p + t.bytes});
    }
    assert_int_equal(release_unused_pages(*m, everything), 0);
    assert_true(checksum(*m) == before_sum);
}

void test_gguf(void **) { release_all_but_layer_zero(std::string(PAGODA_RANDOM_MODELS_DIR) + "/llama_256_f16/model.gguf"); }

void test_folder(void **) { release_all_but_layer_zero(std::string(PAGODA_RANDOM_MODELS_DIR) + "/llama_256_f16/hf"); }

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gguf), cmocka_unit_test(test_folder)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
