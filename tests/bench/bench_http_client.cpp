#include "bench_http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace pagoda::bench {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "pagoda-bench-server: %s\n", what.c_str());
    std::exit(1);
}

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// One keep-alive connection and the request it has in flight.
struct Stream {
    int fd = -1;
    std::string in;  // received, not yet parsed
    bool head_read = false;
    Clock::time_point sent, last;
    bool got_text = false;
};

int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) die("socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 && errno != EINPROGRESS)
        die("connect failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void send_all(int fd, const std::string &s) {
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n > 0) off += size_t(n);
        else if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;  // a request is small: spin
        else die("send failed");
    }
}

// Parses what `s.in` holds; returns true when the response ended (its last chunk arrived).
bool parse(Stream &s, StreamTimings &t) {
    if (!s.head_read) {
        size_t end = s.in.find("\r\n\r\n");
        if (end == std::string::npos) return false;
        if (s.in.compare(0, 12, "HTTP/1.1 200") != 0) die(s.in.substr(0, end));
        s.in.erase(0, end + 4);
        s.head_read = true;
    }
    size_t at = 0;
    bool ended = false;
    for (;;) {
        size_t line = s.in.find("\r\n", at);
        if (line == std::string::npos) break;
        size_t size = std::strtoul(s.in.c_str() + at, nullptr, 16);
        if (s.in.size() < line + 2 + size + 2) break;
        if (size == 0) {
            ended = true;
            at = line + 4;
            break;
        }
        const char *event = s.in.data() + line + 2;
        std::string_view ev(event, size);
        // An event with text (not the closing ones, which carry only finish_reason or [DONE]).
        if (ev.find("\"text\":\"") != std::string_view::npos && ev.find("\"text\":\"\"") == std::string_view::npos) {
            auto now = Clock::now();
            if (!s.got_text) t.ttft_ms.push_back(ms_between(s.sent, now));
            else t.itl_ms.push_back(ms_between(s.last, now));
            s.got_text = true;
            s.last = now;
        }
        at = line + 2 + size + 2;
    }
    s.in.erase(0, at);
    return ended;
}

}  // namespace

StreamTimings run_streamed_requests(int port, const std::string &path, const std::string &body,
                                    int requests, int concurrency) {
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\n\r\n" + body;
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1 failed");
    std::vector<Stream> streams(static_cast<size_t>(concurrency));
    StreamTimings t;
    int sent = 0, done = 0;
    auto start = [&](Stream &s) {
        s.head_read = false;
        s.got_text = false;
        s.sent = Clock::now();
        send_all(s.fd, request);
        ++sent;
    };
    for (size_t i = 0; i < streams.size(); ++i) {
        streams[i].fd = connect_loopback(port);
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.u64 = i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, streams[i].fd, &e) != 0) die("epoll_ctl failed");
    }
    for (Stream &s : streams)
        if (sent < requests) start(s);
    char buf[65536];
    epoll_event ready[64];
    while (done < requests) {
        int n = epoll_wait(ep, ready, 64, 60000);
        if (n == 0) die("no answer for 60 s");
        if (n < 0 && errno != EINTR) die("epoll_wait failed");
        for (int k = 0; k < n; ++k) {
            Stream &s = streams[ready[k].data.u64];
            for (;;) {
                ssize_t got = recv(s.fd, buf, sizeof buf, 0);
                if (got > 0) {
                    s.in.append(buf, size_t(got));
                    continue;
                }
                if (got == 0) die("the server closed a connection");
                if (errno == EAGAIN) break;
                if (errno != EINTR) die("recv failed");
            }
            if (parse(s, t)) {
                if (!s.got_text) t.ttft_ms.push_back(ms_between(s.sent, Clock::now()));
                ++done;
                if (sent < requests) start(s);
            }
        }
    }
    for (Stream &s : streams) close(s.fd);
    close(ep);
    return t;
}

}  // namespace pagoda::bench
