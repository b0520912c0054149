#include "tokenizer/byte_level.hpp"

#include <array>
#include <unordered_map>

#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100 onwards in byte order.
struct ByteLevelAlphabet {
    std::array<std::string, 256> symbol;
    std::unordered_map<char32_t, unsigned char> byte_of;

    ByteLevelAlphabet() {
        char32_t next_free = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const char32_t cp = printable ? char32_t(b) : next_free++;
            append_utf8(symbol[b], cp);
            byte_of[cp] = static_cast<unsigned char>(b);
        }
    }
};

const ByteLevelAlphabet &alphabet() {
    static const ByteLevelAlphabet a;
    return a;
}

}  // namespace

const std::string &byte_level_symbol(unsigned char byte) { return alphabet().symbol[byte]; }

std::string to_byte_level(std::string_view bytes) {
    const auto &a = alphabet();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += a.symbol[static_cast<unsigned char>(c)];
    return out;
}

std::optional<std::string> from_byte_level(std::string_view symbols) {
    const auto &a = alphabet();
    std::string out;
    out.reserve(symbols.size());
    for (size_t pos = 0; pos < symbols.size();) {
        const size_t n = utf8_sequence_length(symbols, pos);
        if (n == 0) return std::nullopt;
        const auto it = a.byte_of.find(utf8_decode_at(symbols, pos));
        if (it == a.byte_of.end()) return std::nullopt;
        out += char(it->second);
        pos += n;
    }
    return out;
}

}  // namespace pagoda::tok
