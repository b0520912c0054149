// POSIX TCP plumbing for the bootstrap rendezvous (tcp_rendezvous.cpp): a socket that closes
// itself, a deadline, and reads and writes that wait with poll() so that none outlives the
// caller's timeout. Blocking with poll is simpler than an event loop for a one-shot bootstrap.
#pragma once

#include <netdb.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace pagoda::mesh::tcp {

// Owns one file descriptor.
class Socket {
public:
    Socket() = default;
    explicit Socket(int fd) noexcept : fd_(fd) {}
    ~Socket() { close(); }
    Socket(Socket &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Socket &operator=(Socket &&other) noexcept;
    Socket(const Socket &) = delete;
    Socket &operator=(const Socket &) = delete;

    int fd() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    void close() noexcept;

private:
    int fd_ = -1;
};

class Deadline {
public:
    // Clamped to about 35 years, so that "forever" (INT64_MAX) does not overflow the clock.
    explicit Deadline(int64_t timeout_ms)
        : end_(std::chrono::steady_clock::now() +
               std::chrono::milliseconds(std::min<int64_t>(timeout_ms, int64_t(1) << 40))) {}
    // What is left, for poll(): never negative, at most INT_MAX.
    int remaining_ms() const noexcept;
    bool passed() const noexcept { return std::chrono::steady_clock::now() >= end_; }

private:
    std::chrono::steady_clock::time_point end_;
};

struct Endpoint {
    std::string host;  // a name, dotted IPv4, or IPv6 without its brackets
    std::string port;  // digits, 1..65535
};

// Splits "host:port" or "[v6 address]:port"; throws INVALID_ARGUMENT naming the address.
Endpoint parse_address(const std::string &address);

struct AddrInfoDeleter {
    void operator()(addrinfo *list) const noexcept { freeaddrinfo(list); }
};
using AddrList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo for a stream socket; `passive` for listening. Throws INVALID_ARGUMENT naming
// the address when the host cannot be resolved.
AddrList resolve(const Endpoint &endpoint, bool passive, const std::string &address);

// Listens on the first address that binds, with SO_REUSEADDR so that a launch right after the
// last one may take the port its sockets still hold in TIME_WAIT. Throws BACKEND with errno's text.
Socket listen_on(const addrinfo *addresses, int backlog, const std::string &address);

// One try at each address, waiting for the handshake until the deadline; an empty socket when
// no one listens there yet (the caller tries again).
Socket try_connect(const addrinfo *addresses, const Deadline &deadline);

// Sends each small message at once rather than waiting to fill a segment (Nagle's algorithm).
void no_delay(int fd) noexcept;

enum class Io { done, closed, timed_out };

// Writes or reads all `bytes`, waiting with poll() until the deadline. `closed` means end of
// file or an error from the connection (reset, broken pipe), with errno set or 0 at end of file.
// Never raises SIGPIPE; retries EINTR.
Io send_all(int fd, const void *data, size_t bytes, const Deadline &deadline);
Io recv_all(int fd, void *data, size_t bytes, const Deadline &deadline);
// Reads what has arrived without waiting, up to `bytes` in all: adds to `got`; false when the
// connection closed or failed.
bool recv_available(int fd, void *data, size_t bytes, size_t &got);
// Reads and drops what has arrived, so that close() sends FIN rather than a reset that could
// discard what we sent last.
void drain(int fd) noexcept;

}  // namespace pagoda::mesh::tcp
