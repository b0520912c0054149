// /v1/embeddings without an engine: the body's fields to the engine's options (each shape of
// `input`, 400s naming the field) and the vectors' text (shortest f32 decimals, OpenAI's
// base64 of little-endian f32 bytes).
#include <cstring>
#include <string>
#include <vector>

#include "server/api_error.hpp"
#include "server/embedding_request.hpp"
#include "server/embedding_text.hpp"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

using nlohmann::json;
using pagoda::server::ApiError;
using pagoda::server::EmbeddingLimits;
using pagoda::server::EmbeddingRequest;
using pagoda::server::parse_embedding_request;

namespace {

EmbeddingLimits limits() {
    EmbeddingLimits l;
    l.vocab_size = 512;
    l.context_length = 8;
    l.dimensions = 64;
    return l;
}

EmbeddingRequest parse(const char *body) {
    return parse_embedding_request(json::parse(body), limits());
}

void expect_400(const char *body, const char *param) {
    try {
        parse(body);
    } catch (const ApiError &e) {
        if (e.status() != 400 || e.param() != param)
            fail_msg("%s: got %d naming '%s' (%s), not 400 naming '%s'", body, e.status(),
                     e.param().c_str(), e.what(), param);
        return;
    }
    fail_msg("%s was taken", body);
}

void test_input_shapes(void **) {
    EmbeddingRequest r = parse(R"({"input":"hello","model":"m","user":"u"})");
    assert_int_equal(r.inputs.size(), 1);
    assert_false(r.inputs[0].is_ids);
    assert_string_equal(r.inputs[0].text.c_str(), "hello");
    assert_false(r.base64);
    assert_int_equal(r.pooling, PAGODA_POOLING_MODEL);
    assert_int_equal(r.normalize, PAGODA_EMBEDDING_NORMALIZE_MODEL);

    r = parse(R"({"input":["a","b","c"],"encoding_format":"base64"})");
    assert_int_equal(r.inputs.size(), 3);
    assert_string_equal(r.inputs[2].text.c_str(), "c");
    assert_true(r.base64);

    r = parse(R"({"input":[1,2,3]})");
    assert_int_equal(r.inputs.size(), 1);
    assert_true(r.inputs[0].is_ids);
    assert_int_equal(r.inputs[0].ids.size(), 3);

    r = parse(R"({"input":[[1,2],[3],"x"],"dimensions":64,"normalize":false,"pooling":"mean",
                  "add_special_tokens":false})");
    assert_int_equal(r.inputs.size(), 3);
    assert_int_equal(r.inputs[1].ids[0], 3);
    assert_false(r.inputs[2].is_ids);
    assert_int_equal(r.normalize, PAGODA_EMBEDDING_NORMALIZE_NONE);
    assert_int_equal(r.pooling, PAGODA_POOLING_MEAN);
    assert_false(r.add_special_tokens);
    assert_int_equal(parse(R"({"input":"x","normalize":true})").normalize,
                     PAGODA_EMBEDDING_NORMALIZE_L2);
    assert_int_equal(parse(R"({"input":"x","pooling":"last"})").pooling, PAGODA_POOLING_LAST);
}

void test_refusals(void **) {
    expect_400(R"({})", "input");
    expect_400(R"({"input":""})", "input");
    expect_400(R"({"input":[]})", "input");
    expect_400(R"({"input":[[]]})", "input");
    expect_400(R"({"input":5})", "input");
    expect_400(R"({"input":["a",5]})", "input");
    expect_400(R"({"input":[1,2.5]})", "input");
    expect_400(R"({"input":[1,512]})", "input");
    expect_400(R"({"input":[-1]})", "input");
    expect_400(R"({"input":[1,2,3,4,5,6,7,8,9]})", "input");  // past the context of 8
    expect_400(R"({"input":"x","dimensions":32})", "dimensions");
    expect_400(R"({"input":"x","dimensions":-64})", "dimensions");
    expect_400(R"({"input":"x","dimensions":64.5})", "dimensions");
    expect_400(R"({"input":"x","encoding_format":"int8"})", "encoding_format");
    expect_400(R"({"input":"x","encoding_format":1})", "encoding_format");
    expect_400(R"({"input":"x","user":7})", "user");
    expect_400(R"({"input":"x","normalize":"yes"})", "normalize");
    expect_400(R"({"input":"x","pooling":"cls"})", "pooling");
    expect_400(R"({"input":"x","truncate_prompt_tokens":3})", "truncate_prompt_tokens");
    std::string many = R"({"input":[)";
    for (int i = 0; i < 2049; ++i) many += std::string(i ? "," : "") + "\"x\"";
    expect_400((many + "]}").c_str(), "input");
}

void test_vector_text(void **) {
    const std::vector<float> v = {0.1f, -2.5e-5f, 1.0f, 0.0f};
    assert_string_equal(pagoda::server::embedding_json_array(v).c_str(), "[0.1,-2.5e-05,1,0]");
    // 1.0f is 00 00 80 3f little-endian; 0.1f is cd cc cc 3d.
    assert_string_equal(pagoda::server::embedding_base64(std::vector<float>{1.0f}).c_str(),
                        "AACAPw==");
    assert_string_equal(
        pagoda::server::embedding_base64(std::vector<float>{1.0f, 0.1f}).c_str(), "AACAP83MzD0=");
    assert_string_equal(
        pagoda::server::embedding_base64(std::vector<float>{1.0f, 0.1f, 1.0f}).c_str(),
        "AACAP83MzD0AAIA/");
    assert_string_equal(pagoda::server::embedding_base64(std::vector<float>{}).c_str(), "");
    // Every value reads back as itself.
    const std::string text = pagoda::server::embedding_json_array(v);
    const json back = json::parse(text);
    for (size_t i = 0; i < v.size(); ++i) assert_true(float(back[i].get<double>()) == v[i]);
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_input_shapes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_vector_text),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
