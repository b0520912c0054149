// An open-loop HTTP client on one thread: each request is sent at its own time (a trace's
// arrival), whether or not earlier ones have been answered, as the traffic a serving system
// faces; answers are read as they come (epoll). One connection per request, closed by the
// server after its answer ("Connection: close").
#pragma once

#include <string>
#include <vector>

namespace pagoda::bench {

struct TimedRequest {
    double at = 0.0;   // seconds after the start
    std::string path;  // e.g. "/v1/completions"
    std::string body;  // JSON
};

struct TimedAnswer {
    int status = 0;        // 0: no answer (connection failed or closed early)
    double sent = 0.0;     // seconds after the start
    double finished = 0.0; // when the whole answer was in
    std::string body;
};

// Sends every request to 127.0.0.1:`port` at its time (in order of `at`) and waits for every
// answer, `timeout_seconds` at most after the last send; answers in request order.
std::vector<TimedAnswer> run_open_loop(int port, const std::vector<TimedRequest> &requests,
                                       double timeout_seconds);

}  // namespace pagoda::bench
