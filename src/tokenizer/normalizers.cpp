#include "tokenizer/normalizers.hpp"

#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "common/error.hpp"

namespace pagoda::tok {

void SequenceNormalizer::normalize(std::string &text) const {
    for (const auto &step : steps_) step->normalize(text);
}

void PrependNormalizer::normalize(std::string &text) const {
    if (!text.empty()) text.insert(0, prefix_);
}

void ReplaceNormalizer::normalize(std::string &text) const {
    text = pattern_.replace_all(text, content_);
}

namespace {

const icu::Normalizer2 &icu_normalizer(UnicodeNormalizer::Form form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2 *n = nullptr;
    switch (form) {
    case UnicodeNormalizer::Form::NFC: n = icu::Normalizer2::getNFCInstance(status); break;
    case UnicodeNormalizer::Form::NFD: n = icu::Normalizer2::getNFDInstance(status); break;
    case UnicodeNormalizer::Form::NFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
    case UnicodeNormalizer::Form::NFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
    case UnicodeNormalizer::Form::Lowercase: break;
    }
    if (U_FAILURE(status) || n == nullptr)
        throw Error(PAGODA_ERR_INTERNAL, std::string("ICU normalizer unavailable: ") + u_errorName(status));
    return *n;
}

}  // namespace

void UnicodeNormalizer::normalize(std::string &text) const {
    if (form_ == Form::Lowercase) {
        std::string out;
        icu::UnicodeString::fromUTF8(text).toLower(icu::Locale::getRoot()).toUTF8String(out);
        text = std::move(out);
        return;
    }
    const icu::Normalizer2 &n = icu_normalizer(form_);
    UErrorCode status = U_ZERO_ERROR;
    // Most text is already normalized: check first, and copy only when it is not.
    if (n.isNormalizedUTF8(text, status) && U_SUCCESS(status)) return;
    status = U_ZERO_ERROR;
    std::string out;
    icu::StringByteSink<std::string> sink(&out, int32_t(text.size()));
    n.normalizeUTF8(0, text, sink, nullptr, status);
    if (U_FAILURE(status))
        throw Error(PAGODA_ERR_INTERNAL, std::string("Unicode normalization failed: ") + u_errorName(status));
    text = std::move(out);
}

}  // namespace pagoda::tok
