// libFuzzer target for the safetensors parser: any input must either parse or fail with
// pagoda::Error. A crash, a sanitizer report, another exception, or a tensor whose bytes are not
// inside the input or overlap another's is a bug.
#include <cstddef>
#include <cstdint>

#include "common/error.hpp"
#include "model/safetensors_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        const auto contents = pagoda::model::parse_safetensors(data, size, "fuzz.safetensors");
        const uint8_t *end = data + size;
        const uint8_t *previous_end = data;
        for (const auto &t : contents.tensors) {
            const auto *begin = static_cast<const uint8_t *>(t.data);
            if (begin < data + 8 || begin > end || t.bytes > uint64_t(end - begin))
                __builtin_trap();
            if (t.bytes == 0) continue;
            // Sorted by offset and disjoint: each non-empty tensor starts after the last ended.
            if (begin < previous_end) __builtin_trap();
            previous_end = begin + t.bytes;
            volatile uint8_t first = begin[0], last = begin[t.bytes - 1];  // ASan checks these
            (void)first;
            (void)last;
        }
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad file.
    }
    return 0;
}
