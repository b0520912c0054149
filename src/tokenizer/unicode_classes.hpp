// The character classes BERT's text cleaning and splitting ask about, as Hugging Face's
// tokenizers define them (Rust's char methods and the unicode_categories crate), answered by ICU.
#pragma once

namespace pagoda::tok {

// The White_Space property (tab, newline, vertical tab, form feed and carriage return included).
bool is_bert_whitespace(char32_t c);
// General category C* (control, format, unassigned, private use, surrogate), except tab,
// newline and carriage return, which count as whitespace.
bool is_bert_control(char32_t c);
// The CJK Unified Ideographs blocks (and compatibility ideographs) BERT puts spaces around, with
// Hugging Face's ranges (Extension E from U+2B920, not U+2B820 as in Google's BERT).
bool is_cjk_ideograph(char32_t c);
// ASCII punctuation (which includes symbols such as $ + < = > ^ ` | ~) or general category P*.
bool is_bert_punctuation(char32_t c);
// General category Mn (what stripping accents removes after NFD).
bool is_nonspacing_mark(char32_t c);

}  // namespace pagoda::tok
