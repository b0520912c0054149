// What the tests of the shared descriptor checks (test_op_checks*.cpp) are built from: a
// Reporter that keeps what a check reported, and assertions that a check accepted a descriptor
// or refused it with one exact status and message, recorded exactly once.
#pragma once

#include <cstring>
#include <functional>
#include <string>

#include "reporter.hpp"

namespace {

// Defined before cmocka.h, whose fail() macro would rename it.
class Recorder final : public pagoda::plugin::Reporter {
public:
    pagoda_status_t fail(pagoda_status_t status, const std::string &message) const override {
        last_status = status;
        last_message = message;
        ++failures;
        return status;
    }
    mutable pagoda_status_t last_status = PAGODA_OK;
    mutable std::string last_message;
    mutable int failures = 0;
};

}  // namespace

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

namespace {

using Check = std::function<pagoda_status_t(const pagoda::plugin::Reporter &)>;

// Stores a raw integer in an enum field, as a C caller may: assigning an out-of-range value
// through the C++ enum type would be undefined behaviour in the test itself.
template <typename E>
void set_raw(E &field, int value) {
    static_assert(sizeof(E) == sizeof(int));
    std::memcpy(&field, &value, sizeof value);
}

void assert_accepted(const Check &check, const char *what) {
    Recorder r;
    const pagoda_status_t s = check(r);
    if (s != PAGODA_OK || r.failures != 0)
        fail_msg("%s: rejected with status %d: %s", what, int(s), r.last_message.c_str());
}

void assert_rejected(const Check &check, pagoda_status_t want, const char *message) {
    Recorder r;
    const pagoda_status_t s = check(r);
    if (s != want || r.failures != 1 || r.last_status != want || r.last_message != message)
        fail_msg("got status %d (%d failures recorded) '%s'\n   want status %d '%s'", int(s),
                 r.failures, r.last_message.c_str(), int(want), message);
}

}  // namespace
