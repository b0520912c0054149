// Encoding into GGUF's quantized block types: f32 -> f16 rounding on every half; per type, the
// error of a round trip through our blocks against ggml's reference quantizer's on the same rows
// (tests/fixtures/quant); zeros, constants and outliers; non-finite input refused.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "ggml_vectors.hpp"
#include "model/quant_blocks.hpp"
#include "model/quantize_blocks.hpp"
#include "model_test_support.hpp"

using pagoda::model::block_layout;
using pagoda::model::dequantize;
using pagoda::model::float_to_half;
using pagoda::model::half_to_float;
using pagoda::model::quantize;
using pagoda::model::TensorType;

namespace {

using pagoda::test::kGgmlQuantTypes;

std::vector<float> round_trip(TensorType t, const std::vector<float> &x) {
    std::vector<unsigned char> blocks(x.size() / block_layout(t).elements * block_layout(t).bytes);
    quantize(t, x.data(), x.size(), blocks.data());
    std::vector<float> y(x.size());
    dequantize(t, blocks.data(), y.size(), y.data());
    return y;
}

double squared_error(const float *a, const float *b, size_t n) {
    double e = 0;
    for (size_t i = 0; i < n; ++i) e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    return e;
}

double energy(const std::vector<float> &x) {
    double e = 0;
    for (float f : x) e += double(f) * f;
    return e;
}

// Every finite half survives half -> float -> half; values halfway between two halves round to
// the even one; the top of the range rounds to the largest half or to infinity as IEEE says.
void halves_round_to_nearest_even(void **) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        if (((h >> 10) & 0x1f) == 0x1f) continue;  // infinities and NaNs
        const float v = half_to_float(uint16_t(h));
        if (float_to_half(v) != h) fail_msg("half 0x%04x (%g) came back as 0x%04x", h, double(v), float_to_half(v));
        const uint32_t next = h + 1;
        if ((h & 0x7fff) == 0x7bff) continue;  // the largest finite half: no finite next one
        const float mid = float((double(v) + double(half_to_float(uint16_t(next)))) / 2);
        const uint16_t want = uint16_t((h & 1) ? next : h);
        if (float_to_half(mid) != want)
            fail_msg("%g, halfway after half 0x%04x, rounded to 0x%04x, want 0x%04x", double(mid), h,
                     float_to_half(mid), want);
    }
    assert_int_equal(float_to_half(65519.0f), 0x7bff);
    assert_int_equal(float_to_half(65520.0f), 0x7c00);
    assert_int_equal(float_to_half(-1e10f), 0xfc00);
    assert_int_equal(float_to_half(INFINITY), 0x7c00);
    assert_int_equal(float_to_half(NAN) & 0x7e00, 0x7e00);
}

// On the rows ggml quantized (scales 1e-3 to 1e3, outliers, zeros), our blocks' squared error
// is at most 10 % above ggml's reference quantizer's, per type over all the rows.
void error_against_ggml(void **) {
    const auto vectors = pagoda::test::read_ggml_vectors(PAGODA_FIXTURES_DIR "/quant/ggml_vectors.bin");
    for (const pagoda::test::GgmlQuantType &t : kGgmlQuantTypes) {
        const pagoda::test::GgmlVectors &v = vectors.at(t.ggml_id);
        double ours = 0, ggml = 0, rows = 0;
        for (size_t r = 0; r < v.source_rows.size(); ++r) {
            const std::vector<float> &x = v.source_rows[r];
            const std::vector<float> y = round_trip(t.type, x);
            // Relative to each row's energy, so that every scale counts alike.
            const double e = energy(x);
            if (e == 0) {
                for (float f : y) assert_true(f == 0.0f);
                continue;
            }
            ours += squared_error(x.data(), y.data(), 256) / e;
            ggml += squared_error(x.data(), v.values.data() + 256 * r, 256) / e;
            rows += 1;
        }
        print_message("%s: relative squared error %.3g (ggml's reference %.3g, ratio %.3f) over %d rows\n",
                      tensor_type_name(t.type), ours / rows, ggml / rows, ours / ggml, int(rows));
        if (ours > 1.10 * ggml)
            fail_msg("%s: relative squared error %g, ggml's %g", tensor_type_name(t.type), ours, ggml);
    }
}

// Rows of other shapes: all equal, all positive, one outlier; their errors stay within each
// type's resolution, and zeros stay zeros.
void special_rows(void **) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const double bound[] = {0.02, 1e-4, 0.01, 0.003, 0.001};  // relative squared error, in kGgmlQuantTypes order
    for (size_t k = 0; k < sizeof kGgmlQuantTypes / sizeof kGgmlQuantTypes[0]; ++k) {
        const TensorType t = kGgmlQuantTypes[k].type;
        std::vector<float> zeros(512, 0.0f), constant(512, 0.75f), positive(512), outlier(512);
        for (float &f : positive) f = std::fabs(normal(rng)) + 0.5f;
        for (float &f : outlier) f = normal(rng);
        outlier[100] = 40.0f;
        for (float f : round_trip(t, zeros)) assert_true(f == 0.0f);
        for (const std::vector<float> *x : {&constant, &positive, &outlier}) {
            const std::vector<float> y = round_trip(t, *x);
            const double rel = squared_error(x->data(), y.data(), x->size()) / energy(*x);
            if (rel > bound[k] * (x == &outlier ? 4 : 1))
                fail_msg("%s: relative squared error %g", tensor_type_name(t), rel);
        }
    }
}

void refusals(void **) {
    std::vector<float> x(256, 1.0f);
    std::vector<unsigned char> out(256 * 4);
    x[17] = NAN;
    pagoda::test::expect_error([&] { quantize(TensorType::Q4_K, x.data(), 256, out.data()); },
                               PAGODA_ERR_INVALID_ARGUMENT, {"value 17", "not finite"});
    x[17] = INFINITY;
    pagoda::test::expect_error([&] { quantize(TensorType::Q8_0, x.data(), 256, out.data()); },
                               PAGODA_ERR_INVALID_ARGUMENT, {"value 17"});
    pagoda::test::expect_error([&] { quantize(TensorType::F16, x.data(), 1, out.data()); },
                               PAGODA_ERR_INTERNAL, {"not a quantized type"});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(halves_round_to_nearest_even),
        cmocka_unit_test(error_against_ggml),
        cmocka_unit_test(special_rows),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
