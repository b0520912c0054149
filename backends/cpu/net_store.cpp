#include "net_store.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>

namespace pagoda::cpu {

namespace {

constexpr char kSet = 'S', kGet = 'G';
// A request larger than this is garbage, not a rank's addresses: drop the connection.
constexpr uint32_t kMaxKeyBytes = 4096, kMaxValueBytes = 16u << 20;

using Clock = std::chrono::steady_clock;

void put_u32(std::vector<char> &out, uint32_t v) {
    v = htonl(v);
    const char *p = reinterpret_cast<const char *>(&v);
    out.insert(out.end(), p, p + 4);
}

uint32_t get_u32(const char *p) {
    uint32_t v = 0;
    std::memcpy(&v, p, 4);
    return ntohl(v);
}

std::string errno_text() { return std::strerror(errno); }

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return int(std::clamp<int64_t>(left, 0, 1 << 30));
}

// A connection the server reads requests from and writes answers to.
struct Client {
    int fd = -1;
    std::vector<char> in, out;
    std::deque<std::string> gets;  // keys asked for and not yet set, in order
};

// One whole request at the front of `in`, or false when more bytes must come first. Sets `bad`
// for a request no rank sends.
bool take_request(std::vector<char> &in, char &op, std::string &key, std::vector<char> &value, bool &bad) {
    if (in.size() < 5) return false;
    op = in[0];
    const uint32_t key_bytes = get_u32(in.data() + 1);
    if ((op != kSet && op != kGet) || key_bytes > kMaxKeyBytes) return bad = true, false;
    size_t need = 5 + size_t(key_bytes);
    if (in.size() < need) return false;
    uint32_t value_bytes = 0;
    if (op == kSet) {
        if (in.size() < need + 4) return false;
        value_bytes = get_u32(in.data() + need);
        if (value_bytes > kMaxValueBytes) return bad = true, false;
        need += 4;
        if (in.size() < need + value_bytes) return false;
        value.assign(in.begin() + long(need), in.begin() + long(need + value_bytes));
    }
    key.assign(in.data() + 5, key_bytes);
    in.erase(in.begin(), in.begin() + long(need + value_bytes));
    return true;
}

}  // namespace

std::string NetAddress::str() const {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (storage.ss_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&storage);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    std::string s = "[";
    s += host;
    s += "]:" + std::to_string(port);
    return s;
}

std::unique_ptr<NetStoreServer> NetStoreServer::start(const NetAddress &address, std::string &error) {
    int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return error = "socket: " + errno_text(), nullptr;
    NetAddress bound = address;
    if (::bind(fd, reinterpret_cast<const sockaddr *>(&bound.storage), bound.length) != 0 ||
        ::listen(fd, 128) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&bound.storage), &bound.length) != 0) {
        error = "listening on " + address.str() + ": " + errno_text();
        ::close(fd);
        return nullptr;
    }
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        error = "pipe: " + errno_text();
        ::close(fd);
        return nullptr;
    }
    return std::unique_ptr<NetStoreServer>(new NetStoreServer(fd, wake[0], wake[1], bound));
}

NetStoreServer::NetStoreServer(int listener, int wake_read, int wake_write, const NetAddress &address)
    : listener_(listener), wake_read_(wake_read), wake_write_(wake_write), address_(address) {
    thread_ = std::thread([this] { serve(); });
}

NetStoreServer::~NetStoreServer() {
    const char stop = 1;
    (void)!::write(wake_write_, &stop, 1);
    thread_.join();
    ::close(listener_);
    ::close(wake_read_);
    ::close(wake_write_);
}

void NetStoreServer::serve() {
    std::map<std::string, std::vector<char>> values;
    std::vector<Client> clients;
    auto answer = [&](Client &c) {
        while (!c.gets.empty()) {
            auto it = values.find(c.gets.front());
            if (it == values.end()) return;
            put_u32(c.out, uint32_t(it->second.size()));
            c.out.insert(c.out.end(), it->second.begin(), it->second.end());
            c.gets.pop_front();
        }
    };
    for (;;) {
        std::vector<pollfd> fds{{wake_read_, POLLIN, 0}, {listener_, POLLIN, 0}};
        for (const Client &c : clients)
            fds.push_back({c.fd, short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[0].revents != 0) break;
        const size_t polled = clients.size();  // a client accepted below waits for the next turn
        if (fds[1].revents & POLLIN) {
            int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                int one = 1;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                clients.push_back({fd, {}, {}, {}});
            }
        }
        for (size_t i = 0; i < polled; ++i) {
            Client &c = clients[i];
            const short revents = fds[i + 2].revents;
            bool drop = (revents & (POLLERR | POLLNVAL)) != 0;
            if (!drop && (revents & (POLLIN | POLLHUP))) {
                char buf[4096];
                ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
                if (n > 0) c.in.insert(c.in.end(), buf, buf + n);
                else if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop = true;
            }
            char op = 0;
            std::string key;
            std::vector<char> value;
            bool bad = false;
            while (!drop && take_request(c.in, op, key, value, bad)) {
                if (op == kSet) {
                    values[key] = std::move(value);
                } else {
                    c.gets.push_back(key);
                }
            }
            drop = drop || bad;
            if (!drop && (revents & POLLOUT) && !c.out.empty()) {
                ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
                if (n > 0) c.out.erase(c.out.begin(), c.out.begin() + n);
                else if (errno != EAGAIN && errno != EINTR) drop = true;
            }
            if (drop) {
                ::close(c.fd);
                c.fd = -1;
            }
        }
        std::erase_if(clients, [](const Client &c) { return c.fd < 0; });
        // A set may answer any client's waiting get; the answers go out on the next turn.
        for (Client &c : clients) answer(c);
    }
    for (Client &c : clients) ::close(c.fd);
}

NetStoreClient::NetStoreClient(const NetAddress &server, std::string prefix, int64_t timeout_ms)
    : server_(server), prefix_(std::move(prefix)), timeout_ms_(timeout_ms) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    // The store is up before its id leaves its process, so a refusal means it has gone; a
    // connection that is neither accepted nor refused (a cut link) waits out the timeout.
    fd_ = ::socket(server.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) broken("socket: " + errno_text());
    if (::connect(fd_, reinterpret_cast<const sockaddr *>(&server.storage), server.length) != 0) {
        if (errno != EINPROGRESS) broken("connecting: " + errno_text());
        pollfd p{fd_, POLLOUT, 0};
        int n = ::poll(&p, 1, remaining_ms(deadline));
        int err = 0;
        socklen_t len = sizeof err;
        if (n == 0) broken("connecting: no answer in " + std::to_string(timeout_ms) + " ms");
        if (n < 0 || ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
            broken("connecting: " + std::string(std::strerror(n < 0 ? errno : err)));
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

NetStoreClient::~NetStoreClient() {
    if (fd_ >= 0) ::close(fd_);
}

void NetStoreClient::broken(const std::string &what) const {
    throw std::runtime_error("the rendezvous store at " + server_.str() + " (served by the process that made the "
                             "communicator's id): " + what);
}

namespace {

// Moves all `bytes` in or out by the deadline; an error text, or "" when done.
std::string move_all(int fd, char *data, size_t bytes, bool out, Clock::time_point deadline, int64_t timeout_ms) {
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = out ? ::send(fd, data + done, bytes - done, MSG_NOSIGNAL)
                        : ::recv(fd, data + done, bytes - done, 0);
        if (n > 0) {
            done += size_t(n);
            continue;
        }
        if (n == 0) return "the store closed the connection (its process has ended?)";
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return errno_text();
        pollfd p{fd, short(out ? POLLOUT : POLLIN), 0};
        const int left = remaining_ms(deadline);
        if (left == 0 || ::poll(&p, 1, left) == 0)
            return "no answer in " + std::to_string(timeout_ms) + " ms";
    }
    return "";
}

}  // namespace

void NetStoreClient::set(const std::string &key, const std::vector<char> &data) {
    const std::string full = prefix_ + key;
    std::vector<char> request{kSet};
    put_u32(request, uint32_t(full.size()));
    request.insert(request.end(), full.begin(), full.end());
    put_u32(request, uint32_t(data.size()));
    request.insert(request.end(), data.begin(), data.end());
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    if (auto e = move_all(fd_, request.data(), request.size(), true, deadline, timeout_ms_); !e.empty())
        broken("setting " + key + ": " + e);
}

std::vector<char> NetStoreClient::get(const std::string &key) {
    const std::string full = prefix_ + key;
    std::vector<char> request{kGet};
    put_u32(request, uint32_t(full.size()));
    request.insert(request.end(), full.begin(), full.end());
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    char length[4];
    std::string e = move_all(fd_, request.data(), request.size(), true, deadline, timeout_ms_);
    if (e.empty()) e = move_all(fd_, length, 4, false, deadline, timeout_ms_);
    if (!e.empty()) broken("waiting for " + key + " (a rank that never came?): " + e);
    std::vector<char> value(get_u32(length));
    if (value.size() > kMaxValueBytes) broken("an answer of " + std::to_string(value.size()) + " bytes");
    if (e = move_all(fd_, value.data(), value.size(), false, deadline, timeout_ms_); !e.empty())
        broken("reading " + key + ": " + e);
    return value;
}

void NetStoreClient::wait(const std::vector<std::string> &keys) {
    for (const std::string &key : keys) (void)get(key);
}

void NetStoreClient::wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &) {
    wait(keys);  // every get waits at most the client's timeout
}

}  // namespace pagoda::cpu
