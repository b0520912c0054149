#include "mesh/tcp_rendezvous.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "common/error.hpp"
#include "mesh/tcp_socket.hpp"
#include "mesh/tcp_wire.hpp"

namespace pagoda::mesh {

namespace {

using tcp::Io;
using namespace tcp::wire;

// At most this many connections not yet known to be ranks, so that a flood cannot use up our
// files; the oldest goes to make room, since a rank says hello as soon as it connects.
constexpr size_t kMaxNewcomers = 64;

using Bytes = std::span<unsigned char>;

class TcpRendezvous final : public Bootstrap {
public:
    TcpRendezvous(std::string address, int32_t rank, int32_t size, int64_t timeout_ms)
        : address_(std::move(address)), rank_(rank), size_(size), timeout_ms_(timeout_ms) {}

    int32_t rank() const noexcept override { return rank_; }
    int32_t size() const noexcept override { return size_; }
    void broadcast(void *data, size_t bytes, int32_t root) override;
    void all_gather(const void *mine, void *out, size_t bytes) override;

    void gather_world(const addrinfo *addresses);
    void join_world(const addrinfo *addresses);

private:
    void begin_call(const Header &call, bool has_data) const;
    // One call through rank 0: each joiner sends its header and `part`; rank 0 checks the headers,
    // puts rank r's part into slot_of(r), and answers every joiner with its header and `result`.
    void exchange(const Header &call, Bytes part, const std::function<Bytes(int32_t)> &slot_of, Bytes result);
    void gather_parts(const Header &call, const std::function<Bytes(int32_t)> &slot_of, const tcp::Deadline &deadline);
    void check_same(const Header &mine, const Header &theirs, int32_t peer);
    [[noreturn]] void abandoned(const Header &notice, const tcp::Deadline &deadline, const std::string &during);
    [[noreturn]] void lost(int32_t peer, Io io, const std::string &during);
    [[noreturn]] void fail(const std::string &what);
    std::string here() const { return "the rendezvous at " + address_; }

    std::string address_;
    int32_t rank_;
    int32_t size_;
    int64_t timeout_ms_;
    std::vector<tcp::Socket> joiners_;  // on rank 0, indexed by rank (slot 0 stays empty)
    tcp::Socket leader_;                // on the other ranks
    int32_t welcomed_ = 0;              // on rank 0: ranks 1 to welcomed_ had the welcome
    uint64_t calls_ = 0;
    std::string failure_;
};

void TcpRendezvous::gather_world(const addrinfo *addresses) {
    const tcp::Deadline deadline(timeout_ms_);
    tcp::Socket listener = tcp::listen_on(addresses, size_ + 16, address_);
    struct Newcomer {
        tcp::Socket socket;
        std::array<unsigned char, kHelloBytes> hello{};
        size_t got = 0;
    };
    std::vector<Newcomer> newcomers;
    std::string refused;
    joiners_.resize(static_cast<size_t>(size_));
    int32_t joined = 0;
    while (joined < size_ - 1) {
        std::vector<pollfd> fds{{listener.fd(), POLLIN, 0}};
        for (const Newcomer &n : newcomers) fds.push_back({n.socket.fd(), POLLIN, 0});
        const int ready = poll(fds.data(), fds.size(), deadline.remaining_ms());
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) fail(here() + ": poll failed: " + std::strerror(errno));
        if (ready == 0) {
            std::string missing;
            for (int32_t r = 1; r < size_; ++r)
                if (!joiners_[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
            fail("only " + std::to_string(joined + 1) + " of " + std::to_string(size_) + " ranks reached " + here() +
                 " within " + std::to_string(timeout_ms_) + " ms; missing: " + missing +
                 (refused.empty() ? "" : "; refused: " + refused));
        }
        // Backwards, so that erasing one keeps the indices of those before it, and fds[i + 1] is newcomers[i].
        for (size_t i = newcomers.size(); i-- > 0;) {
            if (fds[i + 1].revents == 0) continue;
            Newcomer &n = newcomers[i];
            const bool open = tcp::recv_available(n.socket.fd(), n.hello.data(), kHelloBytes, n.got);
            // A stranger is dropped at its first byte that is not our magic, or when it hangs up.
            bool keep = open && std::memcmp(n.hello.data(), kMagic, std::min(n.got, sizeof kMagic)) == 0;
            if (keep && n.got == kHelloBytes) {
                keep = false;
                const Hello hello = decode_hello(n.hello.data());
                const Verdict verdict = judge(hello, size_, [&](int32_t r) { return bool(joiners_[size_t(r)]); });
                if (verdict == Verdict::welcome) {
                    joiners_[static_cast<size_t>(hello.rank)] = std::move(n.socket);
                    ++joined;
                } else {
                    refused += (refused.empty() ? "" : "; ") + refusal(verdict, hello, size_);
                    const auto answer = encode_hello({kVersion, size_, static_cast<int32_t>(verdict)});
                    (void)tcp::send_all(n.socket.fd(), answer.data(), answer.size(), tcp::Deadline(0));
                    tcp::drain(n.socket.fd());
                }
            }
            if (!keep) newcomers.erase(newcomers.begin() + static_cast<ptrdiff_t>(i));
        }
        while (fds[0].revents != 0) {
            tcp::Socket s(accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (!s && errno == EINTR) continue;
            if (!s) break;
            tcp::no_delay(s.fd());
            if (newcomers.size() == kMaxNewcomers) newcomers.erase(newcomers.begin());
            newcomers.push_back({std::move(s)});
        }
    }
    // Closing the listener turns later strangers away at once; the ones still unknown go too.
    listener.close();
    newcomers.clear();
    const auto welcome = encode_hello({kVersion, size_, static_cast<int32_t>(Verdict::welcome)});
    for (int32_t r = 1; r < size_; ++r) {
        const Io io = tcp::send_all(joiners_[size_t(r)].fd(), welcome.data(), welcome.size(), deadline);
        if (io != Io::done) lost(r, io, "the handshake");
        welcomed_ = r;
    }
}

void TcpRendezvous::join_world(const addrinfo *addresses) {
    const tcp::Deadline deadline(timeout_ms_);
    // Rank 0 may start after us: knock until it listens.
    while (!(leader_ = tcp::try_connect(addresses, deadline))) {
        if (deadline.passed())
            fail("rank 0 did not open " + here() + " within " + std::to_string(timeout_ms_) + " ms");
        (void)poll(nullptr, 0, std::min(50, deadline.remaining_ms()));
    }
    const Hello mine{kVersion, size_, rank_};
    const auto hello = encode_hello(mine);
    Io io = tcp::send_all(leader_.fd(), hello.data(), hello.size(), deadline);
    std::array<unsigned char, kHelloBytes> answer{};
    if (io == Io::done) io = tcp::recv_all(leader_.fd(), answer.data(), answer.size(), deadline);
    if (io != Io::done) lost(0, io, "the handshake, waiting for every rank to arrive");
    if (std::memcmp(answer.data(), kMagic, sizeof kMagic) != 0)
        fail("what answers at " + address_ + " is not a Pagoda rendezvous (is another program using the port?)");
    const Hello verdict = decode_hello(answer.data());
    if (verdict.rank == static_cast<int32_t>(Verdict::gave_up)) {
        std::array<unsigned char, kHeaderBytes> raw{};
        io = tcp::recv_all(leader_.fd(), raw.data(), raw.size(), deadline);
        abandoned(io == Io::done ? decode_header(raw.data()) : Header{}, deadline, "the handshake");
    }
    if (verdict.rank != static_cast<int32_t>(Verdict::welcome))
        fail("rank 0 refused this rank at " + here() + ": " +
             refusal(static_cast<Verdict>(verdict.rank), mine, verdict.size, verdict.version));
}

void TcpRendezvous::begin_call(const Header &call, bool has_data) const {
    if (call.root < 0 || call.root >= size_)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "bootstrap broadcast from rank " + std::to_string(call.root) +
                                                     ": a world of " + std::to_string(size_) + " has no such rank");
    if (call.bytes > 0 && !has_data)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "bootstrap " + describe(call) + ": the buffer is NULL");
    if (!failure_.empty())
        throw Error(PAGODA_ERR_BACKEND, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
                                            here() + " failed earlier: " + failure_);
}

void TcpRendezvous::broadcast(void *data, size_t bytes, int32_t root) {
    const Header call{Kind::broadcast, root, calls_ + 1, bytes};
    begin_call(call, data != nullptr);
    ++calls_;
    if (size_ == 1) return;
    const Bytes all(static_cast<unsigned char *>(data), bytes);
    exchange(call, rank_ == root ? all : Bytes(), [&](int32_t r) { return r == root ? all : Bytes(); }, all);
}

void TcpRendezvous::all_gather(const void *mine, void *out, size_t bytes) {
    const Header call{Kind::all_gather, 0, calls_ + 1, bytes};
    if (bytes > SIZE_MAX / static_cast<size_t>(size_))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "bootstrap " + describe(call) + ": too large for one buffer");
    begin_call(call, mine != nullptr && out != nullptr);
    ++calls_;
    const Bytes all(static_cast<unsigned char *>(out), bytes * static_cast<size_t>(size_));
    const auto slot_of = [&](int32_t r) { return all.subspan(static_cast<size_t>(r) * bytes, bytes); };
    // memmove: a caller may gather in place, with `mine` already in its own slot.
    if (bytes > 0) std::memmove(slot_of(rank_).data(), mine, bytes);
    if (size_ > 1) exchange(call, slot_of(rank_), slot_of, all);
}

void TcpRendezvous::exchange(const Header &call, Bytes part, const std::function<Bytes(int32_t)> &slot_of,
                             Bytes result) {
    const tcp::Deadline deadline(timeout_ms_);
    if (rank_ == 0) {
        gather_parts(call, slot_of, deadline);
        const std::vector<unsigned char> answer = encode_message(call, result.data(), result.size());
        for (int32_t r = 1; r < size_; ++r) {
            const Io io = tcp::send_all(joiners_[size_t(r)].fd(), answer.data(), answer.size(), deadline);
            if (io != Io::done) lost(r, io, describe(call));
        }
        return;
    }
    const std::vector<unsigned char> request = encode_message(call, part.data(), part.size());
    Io io = tcp::send_all(leader_.fd(), request.data(), request.size(), deadline);
    std::array<unsigned char, kHeaderBytes> raw{};
    if (io == Io::done) io = tcp::recv_all(leader_.fd(), raw.data(), raw.size(), deadline);
    if (io != Io::done) lost(0, io, describe(call));
    const Header answer = decode_header(raw.data());
    if (answer.kind == Kind::abort) abandoned(answer, deadline, describe(call));
    check_same(call, answer, 0);
    io = tcp::recv_all(leader_.fd(), result.data(), result.size(), deadline);
    if (io != Io::done) lost(0, io, describe(call));
}

void TcpRendezvous::gather_parts(const Header &call, const std::function<Bytes(int32_t)> &slot_of,
                                 const tcp::Deadline &deadline) {
    struct Incoming {
        int32_t rank;
        Bytes slot;
        std::array<unsigned char, kHeaderBytes> header{};
        size_t header_got = 0;
        size_t slot_got = 0;
    };
    std::vector<Incoming> waiting;
    for (int32_t r = 1; r < size_; ++r) waiting.push_back({r, slot_of(r)});
    // All at once rather than rank by rank: a rank that died is heard of now, not after a silent one's timeout.
    while (!waiting.empty()) {
        std::vector<pollfd> fds;
        for (const Incoming &w : waiting) fds.push_back({joiners_[size_t(w.rank)].fd(), POLLIN, 0});
        const int ready = poll(fds.data(), fds.size(), deadline.remaining_ms());
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) fail(here() + ": poll failed: " + std::strerror(errno));
        if (ready == 0) {
            std::string silent;
            for (const Incoming &w : waiting) silent += (silent.empty() ? "" : ", ") + std::to_string(w.rank);
            fail((waiting.size() == 1 ? "rank " : "ranks ") + silent + " did not answer within " +
                 std::to_string(timeout_ms_) + " ms at " + here() + ", during " + describe(call));
        }
        for (size_t i = waiting.size(); i-- > 0;) {
            if (fds[i].revents == 0) continue;
            Incoming &w = waiting[i];
            const int fd = joiners_[size_t(w.rank)].fd();
            bool open = true;
            if (w.header_got < kHeaderBytes) {
                open = tcp::recv_available(fd, w.header.data(), kHeaderBytes, w.header_got);
                // Checked before the part is read, so a peer's byte count never sizes a read.
                if (w.header_got == kHeaderBytes) check_same(call, decode_header(w.header.data()), w.rank);
            }
            if (open && w.header_got == kHeaderBytes)
                open = tcp::recv_available(fd, w.slot.data(), w.slot.size(), w.slot_got);
            if (w.header_got == kHeaderBytes && w.slot_got == w.slot.size())
                waiting.erase(waiting.begin() + static_cast<ptrdiff_t>(i));
            else if (!open)
                lost(w.rank, Io::closed, describe(call));
        }
    }
}

void TcpRendezvous::check_same(const Header &mine, const Header &theirs, int32_t peer) {
    if (theirs == mine) return;
    fail("ranks disagree at " + here() + ": rank " + std::to_string(rank_) + " is at " + describe(mine) +
         ", rank " + std::to_string(peer) + " at " + describe(theirs));
}

void TcpRendezvous::abandoned(const Header &notice, const tcp::Deadline &deadline, const std::string &during) {
    if (notice.kind == Kind::abort && notice.bytes <= kMaxReasonBytes) {
        std::string reason(notice.bytes, '\0');
        if (tcp::recv_all(leader_.fd(), reason.data(), reason.size(), deadline) == Io::done)
            fail("rank 0 gave up: " + reason);  // the reason names the call
    }
    fail("rank 0 gave up during " + during + " without saying why");
}

void TcpRendezvous::lost(int32_t peer, Io io, const std::string &during) {
    const int error = errno;
    if (io == Io::timed_out)
        fail("rank " + std::to_string(peer) + " did not answer within " + std::to_string(timeout_ms_) + " ms at " +
             here() + ", during " + during);
    fail("rank " + std::to_string(peer) + " closed its connection to " + here() + ", during " + during +
         (error != 0 ? std::string(" (") + std::strerror(error) + ")" : ""));
}

void TcpRendezvous::fail(const std::string &what) {
    failure_ = what;
    // Rank 0 tells the others why before hanging up, so that they report the cause, not its silence.
    // A joiner still in the handshake reads a hello first.
    const size_t length = std::min(what.size(), kMaxReasonBytes);
    const auto notice = encode_message({Kind::abort, 0, calls_, length}, what.data(), length);
    const auto gave_up = encode_hello({kVersion, size_, static_cast<int32_t>(Verdict::gave_up)});
    for (int32_t r = 1; r < static_cast<int32_t>(joiners_.size()); ++r) {
        tcp::Socket &s = joiners_[size_t(r)];
        if (!s) continue;
        if (r > welcomed_) (void)tcp::send_all(s.fd(), gave_up.data(), gave_up.size(), tcp::Deadline(0));
        (void)tcp::send_all(s.fd(), notice.data(), notice.size(), tcp::Deadline(0));
        tcp::drain(s.fd());
        s.close();
    }
    leader_.close();
    throw Error(PAGODA_ERR_BACKEND, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + what);
}

}  // namespace

std::unique_ptr<Bootstrap> tcp_rendezvous(const std::string &address, int32_t rank, int32_t size, int64_t timeout_ms) {
    if (size < 1 || rank < 0 || rank >= size)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "rendezvous at " + address + ": rank " + std::to_string(rank) +
                                                     " is not a rank of a world of " + std::to_string(size));
    if (timeout_ms < 1)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "rendezvous at " + address +
                                                     ": the timeout must be at least 1 ms, not " +
                                                     std::to_string(timeout_ms));
    const tcp::Endpoint endpoint = tcp::parse_address(address);
    auto rendezvous = std::make_unique<TcpRendezvous>(address, rank, size, timeout_ms);
    if (size == 1) return rendezvous;
    const tcp::AddrList addresses = tcp::resolve(endpoint, rank == 0, address);
    if (rank == 0)
        rendezvous->gather_world(addresses.get());
    else
        rendezvous->join_world(addresses.get());
    return rendezvous;
}

}  // namespace pagoda::mesh
