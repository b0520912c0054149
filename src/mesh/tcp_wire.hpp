// The bytes the TCP rendezvous (tcp_rendezvous.cpp) sends, in network byte order so that ranks on
// different hosts read them alike.
//
// Handshake: a joiner sends a hello (magic, protocol version, world size, its rank); rank 0
// answers with a hello whose rank field is its verdict: welcome once every rank is in, or why it
// refused. Then each call is a message: a header (kind, root, call number, bytes) and its bytes.
// Rank 0's abort notice is a message whose bytes are the reason, in text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pagoda::mesh::tcp::wire {

inline constexpr unsigned char kMagic[8] = {'P', 'A', 'G', 'O', 'D', 'A', 'R', 'V'};
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHelloBytes = 20;
inline constexpr size_t kHeaderBytes = 24;
// An abort notice longer than this is not one: garbage must not size a read.
inline constexpr size_t kMaxReasonBytes = 1024;

struct Hello {
    uint32_t version;
    int32_t size;
    int32_t rank;  // in rank 0's answer: its Verdict
};

enum class Verdict : int32_t { welcome, wrong_version, wrong_size, wrong_rank, rank_taken, gave_up };

std::array<unsigned char, kHelloBytes> encode_hello(const Hello &hello);
Hello decode_hello(const unsigned char *bytes);  // after the magic
// Rank 0's verdict on a joiner's hello; `taken(r)` says whether rank r has joined already.
Verdict judge(const Hello &joiner, int32_t size, const std::function<bool(int32_t)> &taken);
// Why a joiner was refused, in words; valid for every verdict but welcome and gave_up.
std::string refusal(Verdict verdict, const Hello &joiner, int32_t leader_size, uint32_t leader_version = kVersion);

enum class Kind : uint32_t { broadcast = 1, all_gather = 2, abort = 3 };

struct Header {
    Kind kind;
    int32_t root;
    uint64_t call;   // 1 for a rendezvous's first broadcast or all-gather, then 2, ...
    uint64_t bytes;  // a broadcast's size, an all-gather's part from each rank, an abort's reason
    bool operator==(const Header &) const = default;
};

// The header and then `bytes` from `payload`.
std::vector<unsigned char> encode_message(const Header &header, const void *payload, size_t bytes);
Header decode_header(const unsigned char *bytes);
// "call #3, a broadcast of 64 bytes from rank 1", for errors.
std::string describe(const Header &header);

}  // namespace pagoda::mesh::tcp::wire
