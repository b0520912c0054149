// libFuzzer target: the server's HTTP/1.1 framing (RequestReader over http-parser). The first
// byte picks the limits and the size of the pieces the rest arrives in, as a connection's reads
// would cut it. Whatever the bytes: every request handed out keeps within the limits, a refusal
// is 400, 413 or 431 with a message, nothing is thrown, and the loop always ends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/request_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using pagoda::server::RequestReader;
    if (size == 0) return 0;
    const bool small_limits = (data[0] & 1) != 0;
    const size_t piece = 1 + (data[0] >> 1);  // 1 to 128 bytes a read
    const RequestReader::Limits limits =
        small_limits ? RequestReader::Limits{256, 64} : RequestReader::Limits{16384, 8 << 20};
    int begun = 0, continues = 0;
    RequestReader reader(limits, {[&] { ++begun; }, [&] { ++continues; }});

    const std::string input(reinterpret_cast<const char *>(data + 1), size - 1);
    std::string pending;
    size_t offset = 0, requests = 0;
    while (offset < input.size() || !pending.empty()) {
        if (offset < input.size()) {
            pending.append(input, offset, piece);
            offset += piece;
        }
        bool stop = false;
        while (!pending.empty()) {
            size_t used = 0;
            RequestReader::Outcome outcome = reader.feed(pending, used);
            if (used > pending.size()) std::abort();
            if (outcome == RequestReader::Outcome::Refused) {
                const int s = reader.refused_status();
                if ((s != 400 && s != 413 && s != 431) || reader.refused_message().empty()) std::abort();
                stop = true;
                break;
            }
            pending.erase(0, used);
            if (outcome == RequestReader::Outcome::NeedMore) break;
            // A whole request: within the limits, as the server would answer it.
            const auto &r = reader.request();
            if (r.method.empty() || int64_t(r.body.size()) > limits.max_body_bytes ||
                int64_t(r.url.size()) > limits.max_header_bytes || r.headers.size() > 128)
                std::abort();
            ++requests;
            reader.resume();
        }
        if (stop) break;
        if (offset >= input.size() && !pending.empty()) {
            // Bytes the parser left unused while not paused: only an upgrade does that, refused.
            break;
        }
    }
    if (requests > size_t(begun)) std::abort();  // every request was begun
    return 0;
}
