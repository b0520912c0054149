// libFuzzer target for the kernel choice file's reader (runtime/kernel_choices.hpp): any input
// must either give a table that writes back to JSON and reads back to the same JSON, or fail
// with pagoda::Error. A crash, a sanitizer report or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "runtime/kernel_choices.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    try {
        const auto table = pagoda::runtime::KernelChoices::parse(text, "fuzz input");
        for (const auto &[shape, choice] : table.entries())
            if (pagoda::runtime::KernelChoices::bucket(shape.m_bucket) != shape.m_bucket ||
                choice.variant.empty())
                __builtin_trap();
        const std::string written = table.to_json();
        if (pagoda::runtime::KernelChoices::parse(written, "written").to_json() != written)
            __builtin_trap();
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad file.
    }
    return 0;
}
