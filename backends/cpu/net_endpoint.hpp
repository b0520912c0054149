// This process's end of the network for communicators across machines: the address its ranks
// use (an interface's, config "network_interface", else the first interface up that is not
// loopback), the Gloo TCP device on it, and the rendezvous store it serves for the ids it makes
// (net_store.hpp). Made on first use, kept until the backend is destroyed.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "net_store.hpp"
#include "pagoda/plugin.h"

namespace gloo::transport {
class Device;
}

namespace pagoda::cpu {

// The first address of interface `name` (IPv4 before IPv6), or of the first interface that is up
// and not loopback when `name` is empty (loopback when there is none: a machine alone). False
// with `error` when the interface does not exist, is down, or has no address.
bool interface_address(const std::string &name, NetAddress &out, std::string &error);

class NetEndpoint {
public:
    explicit NetEndpoint(std::string interface) : interface_(std::move(interface)) {}
    ~NetEndpoint();

    // A new id for a communicator across machines: where this process's store listens (started
    // on the first call) and a random key for the communicator. False with `error`.
    bool make_id(pagoda_comm_unique_id_t &id, std::string &error);
    // The Gloo device the ranks of this process connect through. Null with `error`.
    std::shared_ptr<gloo::transport::Device> device(std::string &error);
    // The address the ranks of this process use, without brackets or port ("" before make_id
    // or device first resolved it).
    std::string host() const;

private:
    bool resolve(std::string &error);  // with mutex_ held

    const std::string interface_;
    mutable std::mutex mutex_;
    bool resolved_ = false;
    NetAddress address_;
    std::unique_ptr<NetStoreServer> store_;
    std::shared_ptr<gloo::transport::Device> device_;
};

// What an id of make_id carries.
struct NetCommId {
    NetAddress store;
    std::string key;  // the communicator's, as a store key prefix
};
bool is_net_comm_id(const pagoda_comm_unique_id_t &id);
// False when the bytes are not such an id (a corrupt or foreign one).
bool decode_net_comm_id(const pagoda_comm_unique_id_t &id, NetCommId &out);

}  // namespace pagoda::cpu
