// safetensors_file: the header and the byte ranges of one .safetensors file, valid and malformed.
#include "model/safetensors_file.hpp"

#include "model_test_support.hpp"

using namespace pagoda;
using namespace pagoda::model;
using pagoda::test::Bytes;
using pagoda::test::expect_error;
using pagoda::test::safetensors_image;

namespace {

SafetensorsContents parse(const Bytes &b) {
    return parse_safetensors(b.data(), b.size(), "t.safetensors");
}

void parses_tensors_and_metadata(void **) {
    const std::string header = R"({"__metadata__":{"format":"pt"},)"
                               R"("b":{"dtype":"F16","shape":[2,3],"data_offsets":[16,28]},)"
                               R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                               R"("e":{"dtype":"BF16","shape":[0,5],"data_offsets":[28,28]},)"
                               R"("i":{"dtype":"I64","shape":[],"data_offsets":[28,36]}})";
    const Bytes image = safetensors_image(header, 36);
    const SafetensorsContents c = parse(image);
    assert_int_equal(c.tensors.size(), 4);
    assert_string_equal(c.metadata.at("format").c_str(), "pt");
    // Sorted by offset: a, b, then the empty e, then i.
    const TensorRef &a = c.tensors[0], &b = c.tensors[1];
    assert_string_equal(a.name.c_str(), "a");
    assert_int_equal(int(a.type), int(TensorType::F32));
    assert_true(a.shape == std::vector<int64_t>{4});
    assert_ptr_equal(a.data, image.data() + 8 + header.size());  // into the bytes, not a copy
    assert_int_equal(a.bytes, 16);
    assert_string_equal(a.file.c_str(), "t.safetensors");
    assert_string_equal(b.name.c_str(), "b");
    assert_int_equal(int(b.type), int(TensorType::F16));
    assert_true(b.shape == (std::vector<int64_t>{2, 3}));
    assert_ptr_equal(b.data, image.data() + 8 + header.size() + 16);
    assert_string_equal(c.tensors[2].name.c_str(), "e");
    assert_int_equal(c.tensors[2].bytes, 0);
    assert_true(c.tensors[3].shape.empty());  // a scalar
    assert_int_equal(int(c.tensors[3].type), int(TensorType::I64));
}

void rejects_truncated_and_oversized_headers(void **) {
    const Bytes tiny = {1, 0, 0};
    expect_error([&] { parse(tiny); }, PAGODA_ERR_FORMAT,
                 {"t.safetensors", "truncated", "3 bytes"});
    // Header length past the end of the file.
    const Bytes past = safetensors_image("{}", 0, 1000);
    expect_error([&] { parse(past); }, PAGODA_ERR_FORMAT,
                 {"t.safetensors", "header length 1000", "past the end"});
    const Bytes huge = safetensors_image("{}", 0, UINT64_MAX - 1);
    expect_error([&] { parse(huge); }, PAGODA_ERR_FORMAT, {"past the end"});
    // The whole file is the 8-byte length: an empty header is not JSON.
    const Bytes empty = safetensors_image("", 0);
    expect_error([&] { parse(empty); }, PAGODA_ERR_FORMAT, {"t.safetensors", "not valid JSON"});
}

void rejects_truncated_data(void **) {
    // The header promises 16 bytes; the file ends after 10.
    const Bytes b =
        safetensors_image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 10);
    expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT,
                 {"t.safetensors", "'w'", "[0, 16)", "data section of 10 bytes"});
}

void rejects_range_outside_data(void **) {
    const Bytes b =
        safetensors_image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[100,104]}})", 16);
    expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT, {"'w'", "[100, 104)", "past the data"});
    const Bytes backwards =
        safetensors_image(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 16);
    expect_error([&] { parse(backwards); }, PAGODA_ERR_FORMAT, {"'w'", "end before they begin"});
}

void rejects_overlapping_tensors(void **) {
    const Bytes b = safetensors_image(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                      R"("y":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                                      20);
    expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT, {"'x'", "'y'", "overlap", "12"});
    // One tensor inside another, with a third after both: still caught.
    const Bytes nested =
        safetensors_image(R"({"big":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},)"
                          R"("in":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                          R"("z":{"dtype":"F32","shape":[1],"data_offsets":[32,36]}})",
                          36);
    expect_error([&] { parse(nested); }, PAGODA_ERR_FORMAT, {"'big'", "'in'", "overlap"});
    // Empty tensors take no bytes and overlap nothing.
    const Bytes empty =
        safetensors_image(R"({"big":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},)"
                          R"("none":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                          32);
    assert_int_equal(parse(empty).tensors.size(), 2);
}

void rejects_unsupported_dtypes(void **) {
    const Bytes fp8 =
        safetensors_image(R"({"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", 4);
    expect_error([&] { parse(fp8); }, PAGODA_ERR_UNSUPPORTED,
                 {"t.safetensors", "'w'", "F8_E4M3", "does not load", "F32, F16, BF16"});
    const Bytes boolean =
        safetensors_image(R"({"mask":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}})", 4);
    expect_error([&] { parse(boolean); }, PAGODA_ERR_UNSUPPORTED, {"'mask'", "BOOL"});
    const Bytes unknown =
        safetensors_image(R"({"w":{"dtype":"F33","shape":[4],"data_offsets":[0,4]}})", 4);
    expect_error([&] { parse(unknown); }, PAGODA_ERR_UNSUPPORTED,
                 {"'w'", "F33", "not a safetensors dtype"});
}

void rejects_shape_that_disagrees_with_range(void **) {
    const Bytes b =
        safetensors_image(R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,16]}})", 16);
    expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT,
                 {"'w'", "[2, 3]", "BF16", "needs 12 bytes", "hold 16"});
    // A product that wraps around 2^64 to exactly the range must not pass.
    const Bytes wrap = safetensors_image(
        R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0);
    expect_error([&] { parse(wrap); }, PAGODA_ERR_FORMAT, {"'w'", "more than 2^64"});
    const Bytes too_big = safetensors_image(
        R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4);
    expect_error([&] { parse(too_big); }, PAGODA_ERR_FORMAT, {"'w'", "too large"});
}

void rejects_non_json_headers(void **) {
    const Bytes b = safetensors_image(R"({"w": {"dtype": "F32",,}})", 0);
    expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT,
                 {"t.safetensors", "not valid JSON", "at byte"});
    const Bytes overflow = safetensors_image(R"({"w": {"shape": [1e999]}})", 0);
    expect_error([&] { parse(overflow); }, PAGODA_ERR_FORMAT, {"t.safetensors", "number overflow"});
    const Bytes array = safetensors_image("[1, 2]", 0);
    expect_error([&] { parse(array); }, PAGODA_ERR_FORMAT, {"header is an array"});
}

void rejects_wrong_json_types(void **) {
    struct Case {
        const char *header;
        std::initializer_list<const char *> fragments;
    };
    const Case cases[] = {
        {R"({"w":[1]})", {"'w'", "is an array", "expected an object"}},
        {R"({"w":{"shape":[1],"data_offsets":[0,4]}})", {"'w'", "no \"dtype\""}},
        {R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})",
         {"'w'", "\"dtype\" is an integer"}},
        {R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", {"'w'", "no \"shape\""}},
        {R"({"w":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})",
         {"'w'", "\"shape\" is a string"}},
        {R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})",
         {"'w'", "shape", "non-negative integer"}},
        {R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", {"'w'", "shape holds -1"}},
        {R"({"w":{"dtype":"F32","shape":[1]}})", {"'w'", "no \"data_offsets\""}},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
         {"'w'", "data_offsets has 1 elements"}},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})",
         {"'w'", "data_offsets holds a string"}},
        {R"({"__metadata__":{"format":1}})", {"__metadata__", "'format'", "expected a string"}},
        {R"({"__metadata__":[]})", {"__metadata__ is an array"}},
        {R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", {"empty name"}},
    };
    for (const Case &c : cases) {
        const Bytes b = safetensors_image(c.header, 4);
        expect_error([&] { parse(b); }, PAGODA_ERR_FORMAT, c.fragments);
    }
}

// A generated file read back: the values make_random_model.py recorded in samples.json.
void reads_generated_weights(void **) {
    const std::string dir = test::random_model("llama_f32");
    const SafetensorsFile file(dir + "/hf/model.safetensors");
    assert_string_equal(file.metadata().at("format").c_str(), "pt");
    const nlohmann::json samples = test::read_json(dir + "/samples.json");
    int checked = 0;
    for (const auto &[name, values] : samples.items()) {
        const TensorRef *t = nullptr;
        for (const TensorRef &r : file.tensors())
            if (r.name == name) t = &r;
        assert_non_null(t);
        assert_int_equal(int(t->type), int(TensorType::F32));
        const auto *data = static_cast<const float *>(t->data);
        for (size_t i = 0; i < values.size(); ++i) assert_true(data[i] == values[i].get<float>());
        ++checked;
    }
    assert_true(checked >= 5);
}

void reports_missing_file(void **) {
    expect_error([] { SafetensorsFile f("/nonexistent/model.safetensors"); }, PAGODA_ERR_NOT_FOUND,
                 {"/nonexistent/model.safetensors"});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_tensors_and_metadata),
        cmocka_unit_test(rejects_truncated_and_oversized_headers),
        cmocka_unit_test(rejects_truncated_data),
        cmocka_unit_test(rejects_range_outside_data),
        cmocka_unit_test(rejects_overlapping_tensors),
        cmocka_unit_test(rejects_unsupported_dtypes),
        cmocka_unit_test(rejects_shape_that_disagrees_with_range),
        cmocka_unit_test(rejects_non_json_headers),
        cmocka_unit_test(rejects_wrong_json_types),
        cmocka_unit_test(reads_generated_weights),
        cmocka_unit_test(reports_missing_file),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
