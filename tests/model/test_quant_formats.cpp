// GGUF's quantized block types: Pagoda's reference decoders and block sizes against ggml's own,
// bit for bit, on the blocks of tests/fixtures/quant/ggml_vectors.bin (quantized by ggml from
// random rows, and random bytes); the byte counts of tensors of them; the types a mix gives a
// mixture of experts' tensors.
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "ggml_vectors.hpp"
#include "model/gguf_quantize.hpp"
#include "model/quant_blocks.hpp"
#include "model_test_support.hpp"

using pagoda::model::block_layout;
using pagoda::model::dequantize;
using pagoda::model::is_quantized;
using pagoda::model::tensor_bytes;
using pagoda::model::TensorType;

namespace {

const std::string kVectors = PAGODA_FIXTURES_DIR "/quant/ggml_vectors.bin";

using pagoda::test::kGgmlQuantTypes;

// Block sizes as ggml reports them, and the decoded values of ggml's blocks.
void decoders_match_ggml_bit_for_bit(void **) {
    const auto vectors = pagoda::test::read_ggml_vectors(kVectors);
    assert_int_equal(vectors.size(), sizeof kGgmlQuantTypes / sizeof kGgmlQuantTypes[0]);
    for (const pagoda::test::GgmlQuantType &t : kGgmlQuantTypes) {
        const pagoda::test::GgmlVectors &v = vectors.at(t.ggml_id);
        assert_true(is_quantized(t.type));
        assert_int_equal(block_layout(t.type).elements, v.block_elements);
        assert_int_equal(block_layout(t.type).bytes, v.block_bytes);
        assert_true(v.n_blocks >= 24);
        std::vector<float> got(v.values.size(), -1.0f);
        dequantize(t.type, v.blocks.data(), got.size(), got.data());
        for (size_t i = 0; i < got.size(); ++i) {
            uint32_t want_bits, got_bits;
            std::memcpy(&want_bits, &v.values[i], 4);
            std::memcpy(&got_bits, &got[i], 4);
            if (want_bits != got_bits)
                fail_msg("%s block %zu value %zu: %.9g (0x%08x), ggml decodes %.9g (0x%08x)",
                         tensor_type_name(t.type), i / v.block_elements, i % v.block_elements,
                         double(got[i]), got_bits, double(v.values[i]), want_bits);
        }
    }
}

void tensor_sizes(void **) {
    for (const pagoda::test::GgmlQuantType &t : kGgmlQuantTypes) {
        const pagoda::model::BlockLayout b = block_layout(t.type);
        assert_int_equal(tensor_bytes(t.type, 3 * b.elements, "t"), 3 * b.bytes);
        pagoda::test::expect_error([&] { tensor_bytes(t.type, b.elements + 16, "t"); },
                                   PAGODA_ERR_FORMAT, {"t:", tensor_type_name(t.type), "blocks"});
    }
    for (TensorType plain : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::I32}) {
        assert_false(is_quantized(plain));
        float out = 0;
        pagoda::test::expect_error([&] { dequantize(plain, &out, 1, &out); }, PAGODA_ERR_INTERNAL,
                                   {"not a quantized type"});
    }
}


void mixture_tensor_types(void **) {
    using pagoda::model::QuantMix;
    using pagoda::model::quant_type_for;
    // Stacked experts [256 columns, 512 rows, 8 experts] quantize as matrices do, ffn_down's
    // choice of more bits included; the router stays as it is, as llama.cpp leaves it.
    assert_int_equal(int(quant_type_for(QuantMix::Q4_K_M, "blk.1.ffn_gate_exps.weight", {256, 512, 8}, TensorType::F16, 8, true)),
                     int(TensorType::Q4_K));
    assert_int_equal(int(quant_type_for(QuantMix::Q4_K_M, "blk.0.ffn_down_exps.weight", {256, 256, 8}, TensorType::F16, 8, true)),
                     int(TensorType::Q6_K));
    assert_int_equal(int(quant_type_for(QuantMix::Q8_0, "blk.0.ffn_up_exps.weight", {256, 512, 8}, TensorType::F16, 8, true)),
                     int(TensorType::Q8_0));
    assert_int_equal(int(quant_type_for(QuantMix::Q4_K_M, "blk.0.ffn_gate_inp.weight", {256, 8}, TensorType::F16, 8, true)),
                     int(TensorType::F16));
    // Rows of 96 values take Q8_0's blocks, as a matrix's would.
    assert_int_equal(int(quant_type_for(QuantMix::Q4_K_M, "blk.1.ffn_up_exps.weight", {96, 64, 8}, TensorType::F16, 8, true)),
                     int(TensorType::Q8_0));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoders_match_ggml_bit_for_bit),
        cmocka_unit_test(tensor_sizes),
        cmocka_unit_test(mixture_tensor_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
