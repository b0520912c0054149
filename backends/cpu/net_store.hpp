// The key-value store through which the ranks of a communicator across machines swap their Gloo
// pair addresses (net_comm_group.hpp). Gloo's connectFullMesh needs a store with set and a
// waiting get; Debian's Gloo ships file, hash and Redis stores, none of which two machines
// without a shared file system or a Redis server can use. So the process that makes a
// communicator's id serves a small store on the network, and the id carries its address, as
// NCCL's id carries its bootstrap root's.
//
// Wire: a request is an op byte, a 32-bit key length, the key, and for a set a 32-bit value
// length and the value (lengths in network byte order). A get is answered, once the key is set,
// with the value's length and the value.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace pagoda::cpu {

// An IPv4 or IPv6 address and port, as the store's id bytes carry it.
struct NetAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;
    std::string str() const;  // "10.0.0.1:4711", "[fe80::1]:4711"
};

// The store, served by a thread of this process until destroyed. It keeps what was set (a few
// hundred bytes per rank of each communicator made) for its lifetime, the backend's.
class NetStoreServer {
public:
    // Listens on `address` (its port 0: any free one). Null (with `error`) when it cannot.
    static std::unique_ptr<NetStoreServer> start(const NetAddress &address, std::string &error);
    ~NetStoreServer();
    NetStoreServer(const NetStoreServer &) = delete;
    NetStoreServer &operator=(const NetStoreServer &) = delete;

    // Where it listens, with the port it was given.
    const NetAddress &address() const noexcept { return address_; }

private:
    NetStoreServer(int listener, int wake_read, int wake_write, const NetAddress &address);
    void serve();

    int listener_;
    int wake_read_, wake_write_;  // a pipe that ends serve()
    NetAddress address_;
    std::thread thread_;
};

// One rank's connection to the store. Every call waits at most the timeout it was made with;
// past it, or when the store's process is gone, it throws std::runtime_error saying so.
class NetStoreClient final : public gloo::rendezvous::Store {
public:
    // `prefix` keeps one communicator's keys apart from another's on the same store.
    NetStoreClient(const NetAddress &server, std::string prefix, int64_t timeout_ms);
    ~NetStoreClient() override;

    void set(const std::string &key, const std::vector<char> &data) override;
    std::vector<char> get(const std::string &key) override;
    void wait(const std::vector<std::string> &keys) override;
    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override;

private:
    [[noreturn]] void broken(const std::string &what) const;

    NetAddress server_;
    std::string prefix_;
    int64_t timeout_ms_;
    int fd_ = -1;
};

}  // namespace pagoda::cpu
