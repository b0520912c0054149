// libFuzzer target for decode_intake (engine/intake_wire.hpp): any input must either decode to an
// intake that encodes back to the very same bytes (the encoding is exact and has one form per
// value) and decodes again to the same intake, or fail with pagoda::Error(PAGODA_ERR_FORMAT).
// A crash, a sanitizer report, another status or another exception (std::bad_alloc from a
// forged count, say) is a bug.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.hpp"
#include "engine/intake_wire.hpp"

namespace {

using pagoda::engine::RequestConfig;
using pagoda::engine::StepIntake;

bool same_float(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// Field by field, bit for bit; the structured bindings break the build when a field is added.
bool same_config(const RequestConfig &a, const RequestConfig &b) {
    const auto &[af, amt, as, aseed, aids, astr, aplp, apri, an, abo, abw, alp, aes, actl, aproc,
                 auser, akind, atext, acompiled, apool, anorm] = a;
    const auto &[bf, bmt, bs, bseed, bids, bstr, bplp, bpri, bn, bbo, bbw, blp, bes, bctl, bproc,
                 buser, bkind, btext, bcompiled, bpool, bnorm] = b;
    const auto &[abias, amintok, abad, aallowed] = actl;
    const auto &[bbias, bmintok, bbad, ballowed] = bctl;
    bool same_bias = abias.size() == bbias.size();
    for (size_t i = 0; same_bias && i < abias.size(); ++i)
        same_bias = abias[i].first == bbias[i].first &&
                    same_float(abias[i].second, bbias[i].second);
    const auto &[at, ak, ap, amin, arep, apres, afreq, alogp] = as;
    const auto &[bt, bk, bp, bmin, brep, bpres, bfreq, blogp] = bs;
    return af == bf && amt == bmt && same_float(at, bt) && ak == bk && same_float(ap, bp) &&
           same_float(amin, bmin) && same_float(arep, brep) && same_float(apres, bpres) &&
           same_float(afreq, bfreq) && alogp == blogp && aseed == bseed && aids == bids &&
           astr == bstr && aplp == bplp && apri == bpri && an == bn && abo == bbo && abw == bbw &&
           same_float(alp, blp) && aes == bes && same_bias && amintok == bmintok && abad == bbad &&
           aallowed == ballowed && aproc == bproc && auser == buser && akind == bkind &&
           atext == btext && acompiled == bcompiled && apool == bpool && anorm == bnorm;
}

bool same_intake(const StepIntake &a, const StepIntake &b) {
    if (a.step != b.step || a.stop != b.stop || a.aborted != b.aborted ||
        a.submitted.size() != b.submitted.size())
        return false;
    for (size_t i = 0; i < a.submitted.size(); ++i)
        if (a.submitted[i].id != b.submitted[i].id || a.submitted[i].prompt != b.submitted[i].prompt ||
            !same_config(a.submitted[i].config, b.submitted[i].config))
            return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::span<const unsigned char> input(data, size);
    StepIntake intake;
    try {
        intake = pagoda::engine::decode_intake(input);
    } catch (const pagoda::Error &e) {
        // The expected way to refuse malformed bytes.
        if (e.status() != PAGODA_ERR_FORMAT) __builtin_trap();
        return 0;
    }
    const std::vector<unsigned char> again = pagoda::engine::encode_intake(intake);
    if (!std::equal(again.begin(), again.end(), input.begin(), input.end())) __builtin_trap();
    if (!same_intake(pagoda::engine::decode_intake(again), intake)) __builtin_trap();
    return 0;
}
