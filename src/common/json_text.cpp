#include "common/json_text.hpp"

#include "common/error.hpp"

namespace pagoda {

nlohmann::json parse_json_text(std::string_view text, const std::string &source,
                               uint64_t first_byte) {
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error &e) {
        throw Error(PAGODA_ERR_FORMAT, source + ": not valid JSON (at byte " +
                                           std::to_string(first_byte + e.byte) + "): " + e.what());
    } catch (const nlohmann::json::exception &e) {  // out_of_range 406: a number past double
        throw Error(PAGODA_ERR_FORMAT, source + ": not valid JSON: " + e.what());
    }
}

std::string json_type_phrase(const nlohmann::json &value) {
    switch (value.type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::number_float: return "a fractional number";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    default: return std::string("a ") + value.type_name();
    }
}

}  // namespace pagoda
