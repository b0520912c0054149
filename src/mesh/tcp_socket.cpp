#include "mesh/tcp_socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "common/error.hpp"

namespace pagoda::mesh::tcp {

Socket &Socket::operator=(Socket &&other) noexcept {
    if (this != &other) {
        close();
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

void Socket::close() noexcept {
    // Not retried on EINTR: Linux frees the descriptor either way, and a retry could close another's.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

int Deadline::remaining_ms() const noexcept {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

Endpoint parse_address(const std::string &address) {
    const auto bad = [&](const std::string &why) {
        return Error(PAGODA_ERR_INVALID_ARGUMENT, "rendezvous address \"" + address + "\": " + why +
                                                      " (expected host:port, such as 10.0.0.1:29500 or [::1]:29500)");
    };
    Endpoint endpoint;
    if (!address.empty() && address.front() == '[') {
        const size_t close = address.find(']');
        if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':')
            throw bad("an IPv6 address in brackets must be followed by :port");
        endpoint.host = address.substr(1, close - 1);
        endpoint.port = address.substr(close + 2);
    } else {
        const size_t colon = address.rfind(':');
        if (colon == std::string::npos) throw bad("no port");
        endpoint.host = address.substr(0, colon);
        endpoint.port = address.substr(colon + 1);
        if (endpoint.host.find(':') != std::string::npos) throw bad("an IPv6 address needs brackets");
    }
    if (endpoint.host.empty()) throw bad("no host");
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    const bool digits = !endpoint.port.empty() && endpoint.port.size() <= 5 &&
                        std::all_of(endpoint.port.begin(), endpoint.port.end(), is_digit);
    if (!digits || std::stoi(endpoint.port) < 1 || std::stoi(endpoint.port) > 65535)
        throw bad("the port is not a number from 1 to 65535");
    return endpoint;
}

AddrList resolve(const Endpoint &endpoint, bool passive, const std::string &address) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo *list = nullptr;
    const int rc = getaddrinfo(endpoint.host.c_str(), endpoint.port.c_str(), &hints, &list);
    if (rc != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "rendezvous address \"" + address + "\": cannot resolve \"" +
                                                     endpoint.host + "\": " +
                                                     (rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc)));
    return AddrList(list);
}

Socket listen_on(const addrinfo *addresses, int backlog, const std::string &address) {
    int error = 0;
    for (const addrinfo *a = addresses; a != nullptr; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
        const int on = 1;
        if (s && setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
            bind(s.fd(), a->ai_addr, a->ai_addrlen) == 0 && listen(s.fd(), backlog) == 0)
            return s;
        error = errno;
    }
    throw Error(PAGODA_ERR_BACKEND, "rank 0 cannot listen on the rendezvous address " + address + ": " +
                                        std::strerror(error));
}

namespace {

// Waits until `fd` is ready for `events` (or has an error to report); false when the deadline passed.
bool wait_for(int fd, short events, const Deadline &deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int n = poll(&p, 1, deadline.remaining_ms());
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return true;  // the read or write that follows reports it
    }
}

}  // namespace

Socket try_connect(const addrinfo *addresses, const Deadline &deadline) {
    for (const addrinfo *a = addresses; a != nullptr; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
        if (!s) continue;
        // EINTR leaves the connection going on asynchronously, as EINPROGRESS does.
        if (connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
            if (errno != EINPROGRESS && errno != EINTR) continue;
            int error = 0;
            socklen_t length = sizeof error;
            if (!wait_for(s.fd(), POLLOUT, deadline) ||
                getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0)
                continue;
        }
        no_delay(s.fd());
        return s;
    }
    return Socket();
}

void no_delay(int fd) noexcept {
    const int on = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

Io send_all(int fd, const void *data, size_t bytes, const Deadline &deadline) {
    const auto *p = static_cast<const unsigned char *>(data);
    while (bytes > 0) {
        const ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            bytes -= static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_for(fd, POLLOUT, deadline)) return Io::timed_out;
        } else {
            return Io::closed;
        }
    }
    return Io::done;
}

Io recv_all(int fd, void *data, size_t bytes, const Deadline &deadline) {
    size_t got = 0;
    while (got < bytes) {
        const ssize_t n = recv(fd, static_cast<unsigned char *>(data) + got, bytes - got, 0);
        if (n > 0) {
            got += static_cast<size_t>(n);
        } else if (n == 0) {
            errno = 0;
            return Io::closed;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd, POLLIN, deadline)) return Io::timed_out;
        } else {
            return Io::closed;
        }
    }
    return Io::done;
}

bool recv_available(int fd, void *data, size_t bytes, size_t &got) {
    while (got < bytes) {
        const ssize_t n = recv(fd, static_cast<unsigned char *>(data) + got, bytes - got, MSG_DONTWAIT);
        if (n > 0) {
            got += static_cast<size_t>(n);
        } else if (n == 0) {
            errno = 0;
            return false;
        } else if (errno != EINTR) {
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
    }
    return true;
}

void drain(int fd) noexcept {
    unsigned char sink[4096];
    // Bounded: a peer that keeps sending must not hold us here.
    for (int i = 0; i < 64; ++i)
        if (recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0) return;
}

}  // namespace pagoda::mesh::tcp
