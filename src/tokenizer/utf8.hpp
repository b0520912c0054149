// UTF-8 walking for the tokenizers: code points, the lossy repair Hugging Face's decode applies,
// and how much of a byte string is complete text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pagoda::tok {

// Bytes of the well-formed sequence starting at `pos`, or 0 when the bytes there are not one
// (a stray continuation byte, an overlong form, a surrogate, or a sequence cut short).
size_t utf8_sequence_length(std::string_view text, size_t pos);

// Bytes from `pos` to the next code point boundary: a whole sequence, or 1 for an invalid byte.
inline size_t utf8_step(std::string_view text, size_t pos) {
    const size_t n = utf8_sequence_length(text, pos);
    return n == 0 ? 1 : n;
}

// The code point at `pos`, which must start a well-formed sequence.
char32_t utf8_decode_at(std::string_view text, size_t pos);

void append_utf8(std::string &out, char32_t code_point);

// `bytes` with each maximal ill-formed subpart replaced by U+FFFD (Unicode's "best practice",
// which Rust's String::from_utf8_lossy follows).
std::string utf8_lossy(std::string_view bytes);

bool is_valid_utf8(std::string_view bytes);

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace pagoda::tok
