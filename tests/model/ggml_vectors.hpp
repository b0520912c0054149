// Reads tests/fixtures/quant/ggml_vectors.bin (its generator gives the layout): per quantized
// type, its block size as ggml reports it, blocks, the f32 values ggml decodes them to, and
// the rows ggml quantized into the first of those blocks.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/tensor_table.hpp"

namespace pagoda::test {

// The quantized types the file holds, by ggml's id.
struct GgmlQuantType {
    uint32_t ggml_id;
    model::TensorType type;
};
inline constexpr GgmlQuantType kGgmlQuantTypes[] = {{2, model::TensorType::Q4_0},
                                                    {8, model::TensorType::Q8_0},
                                                    {12, model::TensorType::Q4_K},
                                                    {13, model::TensorType::Q5_K},
                                                    {14, model::TensorType::Q6_K}};

struct GgmlVectors {
    uint32_t block_elements = 0, block_bytes = 0, n_blocks = 0;
    std::vector<unsigned char> blocks;
    std::vector<float> values;
    // Rows of 256 values ggml quantized into the first blocks.
    std::vector<std::vector<float>> source_rows;
};

// By ggml type id. Throws std::runtime_error for a missing or malformed file.
inline std::map<uint32_t, GgmlVectors> read_ggml_vectors(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    if (file.size() < 4 || std::memcmp(file.data(), "PQV2", 4) != 0)
        throw std::runtime_error(path + ": missing or not a PQV2 file");
    std::map<uint32_t, GgmlVectors> out;
    size_t at = 4;
    auto take = [&](void *dst, uint64_t n) {
        if (file.size() - at < n) throw std::runtime_error(path + ": truncated");
        std::memcpy(dst, file.data() + at, size_t(n));
        at += size_t(n);
    };
    while (at < file.size()) {
        uint32_t type = 0;
        GgmlVectors v;
        take(&type, 4);
        take(&v.block_elements, 4);
        take(&v.block_bytes, 4);
        take(&v.n_blocks, 4);
        v.blocks.resize(uint64_t(v.n_blocks) * v.block_bytes);
        take(v.blocks.data(), v.blocks.size());
        v.values.resize(uint64_t(v.n_blocks) * v.block_elements);
        take(v.values.data(), v.values.size() * sizeof(float));
        uint32_t rows = 0;
        take(&rows, 4);
        v.source_rows.assign(rows, std::vector<float>(256));
        for (auto &row : v.source_rows) take(row.data(), 256 * sizeof(float));
        out[type] = std::move(v);
    }
    return out;
}

}  // namespace pagoda::test
