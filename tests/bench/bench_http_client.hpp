// A closed-loop HTTP load generator on one thread: `concurrency` keep-alive connections driven by
// epoll, each sending the next streamed completion as soon as its previous one ends, reading the
// answers' Server-Sent Events as they arrive. One thread, as vLLM's benchmark client (asyncio)
// is: a thread per connection would put scheduler traffic on the machine that the server's
// overhead is measured on.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace pagoda::bench {

struct StreamTimings {
    std::vector<double> ttft_ms;  // one per request: send to first event carrying text
    std::vector<double> itl_ms;   // gaps between a request's successive text events
};

// Runs `requests` POSTs of `body` to `path` on 127.0.0.1:`port`, `concurrency` at a time; exits
// the process with a message on any connection or HTTP failure (a benchmark has no retry).
StreamTimings run_streamed_requests(int port, const std::string &path, const std::string &body,
                                    int requests, int concurrency);

}  // namespace pagoda::bench
