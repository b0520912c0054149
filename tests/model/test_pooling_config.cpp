// What embedding models' files say about pooling (model/pooling_config.hpp): llama.cpp's GGUF
// pooling types, and sentence-transformers folders, malformed ones refused naming the file.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "model/pooling_config.hpp"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

using pagoda::model::gguf_pooling;
using pagoda::model::PoolingKind;
using pagoda::model::read_sentence_transformers_pooling;

namespace {

std::string temp_folder() {
    char path[] = "/tmp/pagoda-pooling-XXXXXX";
    assert_non_null(mkdtemp(path));
    return path;
}

void write(const std::string &path, const char *text) {
    FILE *f = std::fopen(path.c_str(), "w");
    assert_non_null(f);
    std::fputs(text, f);
    std::fclose(f);
}

void test_gguf_types(void **) {
    assert_true(gguf_pooling(1, "k").kind == PoolingKind::mean);
    assert_true(gguf_pooling(3, "k").kind == PoolingKind::last);
    assert_true(gguf_pooling(2, "k").kind == PoolingKind::unsupported);
    assert_string_equal(gguf_pooling(2, "k").named.c_str(), "cls");
    assert_string_equal(gguf_pooling(4, "k").named.c_str(), "rank");
    assert_true(gguf_pooling(0, "k").kind == PoolingKind::unspecified);
    assert_true(gguf_pooling(99, "k").kind == PoolingKind::unspecified);
    assert_int_equal(gguf_pooling(3, "k").normalize, -1);  // GGUF has no key for it
}

void test_sentence_transformers(void **) {
    const std::string dir = temp_folder();
    // No modules.json: nothing said.
    pagoda::model::PoolingConfig p = read_sentence_transformers_pooling(dir);
    assert_true(p.kind == PoolingKind::unspecified);
    assert_int_equal(p.normalize, -1);
    // Modules without Normalize: as pooled; the Pooling module's first mode set.
    std::filesystem::create_directory(dir + "/pool");
    write(dir + "/modules.json",
          R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
              {"type": "sentence_transformers.models.Pooling", "path": "pool"}])");
    write(dir + "/pool/config.json",
          R"({"pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true})");
    p = read_sentence_transformers_pooling(dir);
    assert_true(p.kind == PoolingKind::mean);
    assert_int_equal(p.normalize, 0);
    write(dir + "/modules.json",
          R"([{"type": "sentence_transformers.models.Pooling", "path": "pool"},
              {"type": "sentence_transformers.models.Normalize", "path": "2_Normalize"}])");
    write(dir + "/pool/config.json", R"({"pooling_mode_max_tokens": true})");
    p = read_sentence_transformers_pooling(dir);
    assert_true(p.kind == PoolingKind::unsupported);
    assert_string_equal(p.named.c_str(), "max");
    assert_int_equal(p.normalize, 1);
    assert_non_null(std::strstr(p.source.c_str(), "pooling_mode_max_tokens"));
    // Malformed files are refused, naming them.
    for (const char *bad : {"{\"not\": \"an array\"}", "[{"}) {
        write(dir + "/modules.json", bad);
        try {
            read_sentence_transformers_pooling(dir);
            fail_msg("modules.json '%s' was read", bad);
        } catch (const pagoda::Error &e) {
            assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
            assert_non_null(std::strstr(e.what(), "modules.json"));
        }
    }
    std::filesystem::remove_all(dir);
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_types),
        cmocka_unit_test(test_sentence_transformers),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
