#include "server/embedding_text.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace pagoda::server {

std::string embedding_json_array(std::span<const float> values) {
    std::string out;
    out.reserve(values.size() * 12 + 2);
    out += '[';
    char buffer[32];
    for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += ',';
        // Shortest round trip of the float itself, not of its double (which would print
        // 0.10000000149011612 for 0.1f).
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, values[i]);
        out.append(buffer, r.ptr);
    }
    out += ']';
    return out;
}

std::string embedding_base64(std::span<const float> values) {
    static const char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(values.size() * 4, '\0');
    for (size_t i = 0; i < values.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &values[i], 4);
        for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = char((bits >> (8 * b)) & 0xFFu);
    }
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t left = bytes.size() - i;
        uint32_t group = uint32_t(uint8_t(bytes[i])) << 16;
        if (left > 1) group |= uint32_t(uint8_t(bytes[i + 1])) << 8;
        if (left > 2) group |= uint32_t(uint8_t(bytes[i + 2]));
        out += kAlphabet[(group >> 18) & 63];
        out += kAlphabet[(group >> 12) & 63];
        out += left > 1 ? kAlphabet[(group >> 6) & 63] : '=';
        out += left > 2 ? kAlphabet[group & 63] : '=';
    }
    return out;
}

}  // namespace pagoda::server
