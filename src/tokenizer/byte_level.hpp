// GPT-2's byte-level alphabet: every byte stands for one printable code point, so that BPE can
// work on text while covering all 256 byte values ("Ġ" is the space, "Ċ" the newline).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagoda::tok {

// The symbol (UTF-8) of each byte.
const std::string &byte_level_symbol(unsigned char byte);

// `bytes` as a string of symbols.
std::string to_byte_level(std::string_view bytes);

// The bytes a string of symbols stands for; nullopt when it holds a code point outside the
// alphabet (an added token such as "<|eot_id|>" is ASCII, and so inside it).
std::optional<std::string> from_byte_level(std::string_view symbols);

}  // namespace pagoda::tok
