// libFuzzer target for json_schema_to_gbnf: any JSON document either compiles to GBNF that
// parse_gbnf accepts or fails with pagoda::Error. A crash, a hang, a sanitizer report, another
// exception (a stray nlohmann::json type_error, say), or a compiled grammar the parser refuses is
// a bug. Inputs that are not JSON are skipped: parsing JSON is nlohmann's business.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "grammar/grammar.hpp"
#include "grammar/json_schema_to_gbnf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, false);
    if (schema.is_discarded()) return 0;
    std::string gbnf;
    try {
        gbnf = pagoda::grammar::json_schema_to_gbnf(schema);
    } catch (const pagoda::Error &) {
        return 0;  // the expected way to refuse a schema
    }
    try {
        (void)pagoda::grammar::parse_gbnf(gbnf);
    } catch (const pagoda::Error &) {
        __builtin_trap();  // the compiler wrote a grammar the parser refuses
    }
    return 0;
}
