// libFuzzer target for the GGUF reader: any input must either describe a model or fail with
// pagoda::Error. A crash, a sanitizer report, another exception or a tensor outside the mapping is
// a bug. The bytes go through a memfd so that the reader maps them exactly as it maps a file.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "model/gguf_file.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_vocabulary.hpp"
#include "model/quant_blocks.hpp"

namespace {

// Reads every typed accessor on every key: each must return or throw Error, whatever the bytes.
void read_all_metadata(const pagoda::model::GgufFile &file) {
    for (const auto &entry : file.metadata()) {
        const std::string &key = entry.first;  // clang 14 lambdas cannot capture bindings
        auto attempt = [&](auto read) {
            try {
                read();
            } catch (const pagoda::Error &) {
            }
        };
        attempt([&] { (void)file.get_string(key); });
        attempt([&] { (void)file.get_u32(key); });
        attempt([&] { (void)file.get_f32(key); });
        attempt([&] { (void)file.get_bool(key); });
        attempt([&] { (void)file.get_string_array(key); });
        attempt([&] { (void)file.get_f32_array(key); });
        attempt([&] { (void)file.get_i32_array(key); });
        attempt([&] { (void)file.get_array_length(key); });
    }
}

// The open-time checks promise every tensor lies inside the mapping; hold them to it.
void check_tensors(const pagoda::model::GgufFile &file) {
    const unsigned char *begin = file.mapping().data();
    const unsigned char *end = begin + file.mapping().size();
    for (const auto &t : file.tensors()) {
        if (t.data < begin || t.data > end || t.bytes > uint64_t(end - t.data)) __builtin_trap();
        if (t.bytes > 0) {
            volatile unsigned char first = t.data[0], last = t.data[t.bytes - 1];
            (void)first;
            (void)last;
        }
        // Quantized blocks decode within the tensor's bytes, whatever they hold (the first
        // few blocks: enough for the decoders, cheap for the fuzzer).
        if (pagoda::model::is_quantized(t.type)) {
            const pagoda::model::BlockLayout b = pagoda::model::block_layout(t.type);
            const uint64_t blocks = std::min<uint64_t>(t.bytes / b.bytes, 8);
            std::vector<float> values(size_t(blocks * b.elements));
            pagoda::model::dequantize(t.type, t.data, blocks * b.elements, values.data());
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int fd = memfd_create("fuzz_gguf", MFD_CLOEXEC);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || ftruncate(fd, 0) != 0) __builtin_trap();
    size_t done = 0;
    while (done < size) {
        const ssize_t n = pwrite(fd, data + done, size - done, off_t(done));
        if (n <= 0) __builtin_trap();
        done += size_t(n);
    }
    try {
        pagoda::model::GgufFile file(path);
        check_tensors(file);
        read_all_metadata(file);
        const pagoda::model::ModelConfig config = pagoda::model::gguf_model_config(file);
        const pagoda::model::TensorTable table = pagoda::model::gguf_tensor_table(file, config);
        (void)table;
        (void)pagoda::model::read_gguf_vocabulary(file);
    } catch (const pagoda::Error &) {
        // The expected way to reject a bad file.
    }
    return 0;
}
