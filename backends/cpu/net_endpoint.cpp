#include "net_endpoint.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>

#include <gloo/transport/tcp/device.h>

namespace pagoda::cpu {

namespace {

// Id layout: magic, family, port (network order), 16 address bytes, 16 key bytes.
constexpr unsigned char kMagic[8] = {'P', 'G', 'N', 'E', 'T', 'I', 'D', '1'};
constexpr size_t kFamilyAt = 8, kPortAt = 9, kAddressAt = 11, kKeyAt = 27, kKeyBytes = 16;

bool usable(const ifaddrs *a) {
    return a->ifa_addr != nullptr && (a->ifa_flags & IFF_UP) &&
           (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6);
}

void take(const ifaddrs *a, NetAddress &out) {
    out = {};
    out.length = a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&out.storage, a->ifa_addr, out.length);
}

std::string hex(const unsigned char *bytes, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) s += {digits[bytes[i] >> 4], digits[bytes[i] & 15]};
    return s;
}

}  // namespace

bool interface_address(const std::string &name, NetAddress &out, std::string &error) {
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0) return error = std::string("getifaddrs: ") + std::strerror(errno), false;
    const ifaddrs *pick = nullptr, *loopback = nullptr;
    bool named = false;
    for (int family : {AF_INET, AF_INET6}) {
        for (const ifaddrs *a = list; a != nullptr && pick == nullptr; a = a->ifa_next) {
            if (!name.empty() && name != a->ifa_name) continue;
            named = true;
            if (!usable(a) || a->ifa_addr->sa_family != family) continue;
            if (!name.empty() || !(a->ifa_flags & IFF_LOOPBACK)) pick = a;
            else if (loopback == nullptr) loopback = a;
        }
    }
    if (pick == nullptr && name.empty()) pick = loopback;
    if (pick != nullptr) take(pick, out);
    ::freeifaddrs(list);
    if (pick != nullptr) return true;
    if (!name.empty())
        error = named ? "network interface " + name + " is down or has no IP address"
                      : "no network interface named " + name + " (config network_interface)";
    else
        error = "no network interface is up";
    return false;
}

NetEndpoint::~NetEndpoint() {
    // The store's thread ends before the device, whose loop thread Gloo's pairs may still use.
    store_.reset();
    device_.reset();
}

bool NetEndpoint::resolve(std::string &error) {
    if (resolved_) return true;
    if (!interface_address(interface_, address_, error)) return false;
    resolved_ = true;
    return true;
}

namespace {

// "10.0.0.1" from "10.0.0.1:0", "fe80::1" from "[fe80::1]:0".
std::string host_of(const NetAddress &address) {
    std::string s = address.str();
    s = s.substr(0, s.rfind(':'));
    if (!s.empty() && s.front() == '[') s = s.substr(1, s.size() - 2);
    return s;
}

}  // namespace

std::string NetEndpoint::host() const {
    std::lock_guard lock(mutex_);
    return resolved_ ? host_of(address_) : "";
}

bool NetEndpoint::make_id(pagoda_comm_unique_id_t &id, std::string &error) {
    std::lock_guard lock(mutex_);
    if (!resolve(error)) return false;
    if (store_ == nullptr) {
        store_ = NetStoreServer::start(address_, error);
        if (store_ == nullptr) return error = "starting the rendezvous store: " + error, false;
    }
    std::memset(id.bytes, 0, sizeof id.bytes);
    std::memcpy(id.bytes, kMagic, sizeof kMagic);
    const NetAddress &a = store_->address();
    id.bytes[kFamilyAt] = a.storage.ss_family == AF_INET ? 4 : 6;
    if (a.storage.ss_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&a.storage);
        std::memcpy(id.bytes + kPortAt, &in->sin_port, 2);
        std::memcpy(id.bytes + kAddressAt, &in->sin_addr, 4);
    } else {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&a.storage);
        std::memcpy(id.bytes + kPortAt, &in6->sin6_port, 2);
        std::memcpy(id.bytes + kAddressAt, &in6->sin6_addr, 16);
    }
    // A counter and random bytes: unique among the ids this store hands out, and unlikely to
    // meet a stale rank of an earlier launch.
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    const uint64_t now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    uint64_t words[2] = {counter.fetch_add(1), ((uint64_t(rd()) << 32) ^ rd()) ^ now};
    std::memcpy(id.bytes + kKeyAt, words, kKeyBytes);
    return true;
}

std::shared_ptr<gloo::transport::Device> NetEndpoint::device(std::string &error) {
    std::lock_guard lock(mutex_);
    if (device_ != nullptr) return device_;
    if (!resolve(error)) return nullptr;
    const std::string host = host_of(address_);
    try {
        gloo::transport::tcp::attr attr;
        attr.hostname = host;
        device_ = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception &e) {
        error = "making Gloo's TCP device on " + host + ": " + e.what();
        return nullptr;
    }
    return device_;
}

bool is_net_comm_id(const pagoda_comm_unique_id_t &id) {
    return std::memcmp(id.bytes, kMagic, sizeof kMagic) == 0;
}

bool decode_net_comm_id(const pagoda_comm_unique_id_t &id, NetCommId &out) {
    if (!is_net_comm_id(id)) return false;
    out = {};
    if (id.bytes[kFamilyAt] == 4) {
        auto *in = reinterpret_cast<sockaddr_in *>(&out.store.storage);
        in->sin_family = AF_INET;
        std::memcpy(&in->sin_port, id.bytes + kPortAt, 2);
        std::memcpy(&in->sin_addr, id.bytes + kAddressAt, 4);
        out.store.length = sizeof *in;
    } else if (id.bytes[kFamilyAt] == 6) {
        auto *in6 = reinterpret_cast<sockaddr_in6 *>(&out.store.storage);
        in6->sin6_family = AF_INET6;
        std::memcpy(&in6->sin6_port, id.bytes + kPortAt, 2);
        std::memcpy(&in6->sin6_addr, id.bytes + kAddressAt, 16);
        out.store.length = sizeof *in6;
    } else {
        return false;
    }
    out.key = hex(id.bytes + kKeyAt, kKeyBytes) + "/";
    return true;
}

}  // namespace pagoda::cpu
