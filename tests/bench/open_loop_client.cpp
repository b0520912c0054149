#include "open_loop_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>

namespace pagoda::bench {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A blocking connect and send (loopback: immediate), then the socket is read through epoll.
int send_request(int port, const TimedRequest &r) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        close(fd);
        return -1;
    }
    const std::string msg = "POST " + r.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
    for (size_t done = 0; done < msg.size();) {
        const ssize_t n = send(fd, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += size_t(n);
    }
    return fd;
}

// Status code and body of a whole response read to the connection's end.
void parse_response(const std::string &raw, TimedAnswer &a) {
    if (raw.compare(0, 5, "HTTP/") != 0) return;
    const size_t space = raw.find(' ');
    if (space == std::string::npos) return;
    a.status = std::atoi(raw.c_str() + space + 1);
    const size_t head_end = raw.find("\r\n\r\n");
    if (head_end != std::string::npos) a.body = raw.substr(head_end + 4);
}

}  // namespace

std::vector<TimedAnswer> run_open_loop(int port, const std::vector<TimedRequest> &requests,
                                       double timeout_seconds) {
    std::vector<TimedAnswer> answers(requests.size());
    std::unordered_map<int, size_t> open;  // fd -> request index
    std::unordered_map<int, std::string> received;
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    const auto t0 = std::chrono::steady_clock::now();
    size_t next = 0;
    char buf[65536];
    double last_send = 0.0;
    while (next < requests.size() || !open.empty()) {
        const double now = seconds_since(t0);
        while (next < requests.size() && requests[next].at <= now) {
            TimedAnswer &a = answers[next];
            a.sent = seconds_since(t0);
            last_send = a.sent;
            const int fd = send_request(port, requests[next]);
            if (fd >= 0) {
                epoll_event ev{};
                ev.events = EPOLLIN;
                ev.data.fd = fd;
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                open.emplace(fd, next);
            }
            ++next;
        }
        if (next >= requests.size() && seconds_since(t0) > last_send + timeout_seconds) break;
        int wait_ms = 50;
        if (next < requests.size())
            wait_ms = std::max(0, int((requests[next].at - seconds_since(t0)) * 1000.0));
        epoll_event events[64];
        const int n = epoll_wait(ep, events, 64, std::min(wait_ms, 50));
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            const ssize_t got = recv(fd, buf, sizeof buf, 0);
            if (got > 0) {
                received[fd].append(buf, size_t(got));
                continue;
            }
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            // The server closed: the answer is whole.
            TimedAnswer &a = answers[open[fd]];
            a.finished = seconds_since(t0);
            parse_response(received[fd], a);
            epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
            close(fd);
            open.erase(fd);
            received.erase(fd);
        }
    }
    for (const auto &[fd, index] : open) close(fd);
    close(ep);
    return answers;
}

}  // namespace pagoda::bench
