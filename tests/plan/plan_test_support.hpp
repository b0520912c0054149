// Shared by the planner tests: cmocka (included last, its macros clash with the standard
// library) and a check that a call throws pagoda::Error with a given status and message part.
#pragma once

#include <string>

#include "common/error.hpp"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

namespace pagoda::test {

// Runs `body`; fails the test unless it throws Error with `status` and a message containing
// `part`.
template <typename Body>
void expect_error(pagoda_status_t status, const std::string &part, Body &&body) {
    try {
        body();
    } catch (const pagoda::Error &e) {
        if (e.status() != status)
            fail_msg("want status %d, got %d: %s", int(status), int(e.status()), e.what());
        if (std::string(e.what()).find(part) == std::string::npos)
            fail_msg("message \"%s\" does not mention \"%s\"", e.what(), part.c_str());
        return;
    }
    fail_msg("no error; want one mentioning \"%s\"", part.c_str());
}

}  // namespace pagoda::test
