#include "mesh/tcp_wire.hpp"

#include <cstring>

namespace pagoda::mesh::tcp::wire {

namespace {

void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (24 - 8 * i));
}

uint32_t get_u32(const unsigned char *p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

void put_u64(unsigned char *p, uint64_t v) {
    put_u32(p, static_cast<uint32_t>(v >> 32));
    put_u32(p + 4, static_cast<uint32_t>(v));
}

uint64_t get_u64(const unsigned char *p) { return uint64_t(get_u32(p)) << 32 | get_u32(p + 4); }

}  // namespace

std::array<unsigned char, kHelloBytes> encode_hello(const Hello &hello) {
    std::array<unsigned char, kHelloBytes> bytes{};
    std::memcpy(bytes.data(), kMagic, sizeof kMagic);
    put_u32(&bytes[8], hello.version);
    put_u32(&bytes[12], static_cast<uint32_t>(hello.size));
    put_u32(&bytes[16], static_cast<uint32_t>(hello.rank));
    return bytes;
}

Hello decode_hello(const unsigned char *bytes) {
    return {get_u32(bytes + 8), static_cast<int32_t>(get_u32(bytes + 12)), static_cast<int32_t>(get_u32(bytes + 16))};
}

Verdict judge(const Hello &joiner, int32_t size, const std::function<bool(int32_t)> &taken) {
    if (joiner.version != kVersion) return Verdict::wrong_version;
    if (joiner.size != size) return Verdict::wrong_size;
    if (joiner.rank < 1 || joiner.rank >= size) return Verdict::wrong_rank;
    return taken(joiner.rank) ? Verdict::rank_taken : Verdict::welcome;
}

std::string refusal(Verdict verdict, const Hello &joiner, int32_t leader_size, uint32_t leader_version) {
    const std::string who = "a rank " + std::to_string(joiner.rank) + " ";
    switch (verdict) {
    case Verdict::wrong_version:
        return who + "speaking rendezvous protocol version " + std::to_string(joiner.version) + ", rank 0 version " +
               std::to_string(leader_version);
    case Verdict::wrong_size:
        return who + "launched for a world of " + std::to_string(joiner.size) + " ranks, rank 0 for " +
               std::to_string(leader_size);
    case Verdict::wrong_rank:
        return who + "in a world of " + std::to_string(leader_size) + ", whose joining ranks are 1 to " +
               std::to_string(leader_size - 1);
    case Verdict::rank_taken:
        return who + "arrived after another process had joined as rank " + std::to_string(joiner.rank);
    default:
        return who + "with an unknown verdict " + std::to_string(static_cast<int32_t>(verdict));
    }
}

std::vector<unsigned char> encode_message(const Header &header, const void *payload, size_t bytes) {
    std::vector<unsigned char> message(kHeaderBytes + bytes);
    put_u32(&message[0], static_cast<uint32_t>(header.kind));
    put_u32(&message[4], static_cast<uint32_t>(header.root));
    put_u64(&message[8], header.call);
    put_u64(&message[16], header.bytes);
    if (bytes > 0) std::memcpy(&message[kHeaderBytes], payload, bytes);
    return message;
}

Header decode_header(const unsigned char *bytes) {
    return {static_cast<Kind>(get_u32(bytes)), static_cast<int32_t>(get_u32(bytes + 4)), get_u64(bytes + 8),
            get_u64(bytes + 16)};
}

std::string describe(const Header &header) {
    const std::string call = "call #" + std::to_string(header.call) + ", ";
    switch (header.kind) {
    case Kind::broadcast:
        return call + "a broadcast of " + std::to_string(header.bytes) + " bytes from rank " +
               std::to_string(header.root);
    case Kind::all_gather:
        return call + "an all-gather of " + std::to_string(header.bytes) + " bytes from each rank";
    case Kind::abort:
        return call + "an abort notice";
    default:
        return call + "a message of unknown kind " + std::to_string(static_cast<uint32_t>(header.kind));
    }
}

}  // namespace pagoda::mesh::tcp::wire
