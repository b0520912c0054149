#include "shm_comm_group.hpp"

#include "collective_reduce.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>

namespace pagoda::cpu {

namespace {

constexpr char kIdMagic[8] = "PGDSHM1";
constexpr uint64_t kSegmentMagic = 0x31474553'44475000ull;  // "\0PGDSEG1"
// Staging and channel memory in all; tmpfs pages are only used once touched.
constexpr size_t kSlotsBytes = size_t(16) << 20, kChannelsBytes = size_t(16) << 20;
constexpr size_t kMinBuffer = size_t(64) << 10;
// How often a waiting rank wakes to check its peers and its deadline.
constexpr int64_t kWakeMs = 10;

size_t round_down_page(size_t n) { return std::max(kMinBuffer, n & ~size_t(4095)); }

std::string segment_name(const pagoda_comm_unique_id_t &id) {
    const char *name = reinterpret_cast<const char *>(id.bytes) + sizeof kIdMagic;
    return std::string(name, strnlen(name, sizeof id.bytes - sizeof kIdMagic));
}

long futex(const void *word, int op, uint32_t value, const timespec *timeout) {
    return syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}

void wake_all(const std::atomic<uint32_t> &word) { futex(&word, FUTEX_WAKE, INT_MAX, nullptr); }

// Whether process `pid` still runs: gone, or a zombie nobody has reaped yet, counts as dead.
bool process_alive(int32_t pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return false;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
    FILE *f = std::fopen(path, "r");
    // No stat file: either no /proc (trust kill()), or the process was a zombie at kill() and
    // has been reaped since, so ask kill() again. Calling it alive here made a survivor report
    // only "the communicator was aborted" for a peer that had died.
    if (f == nullptr) return !(kill(pid, 0) != 0 && errno == ESRCH);
    char state = '?';
    // "pid (comm) state ...": the state follows the last ')'.
    char line[512];
    if (std::fgets(line, sizeof line, f) != nullptr)
        if (const char *p = std::strrchr(line, ')'); p != nullptr && p[1] == ' ') state = p[2];
    std::fclose(f);
    return state != 'Z' && state != 'X';
}

}  // namespace

struct ShmCommGroup::Header {
    std::atomic<uint64_t> magic;  // set last by the rank that made the segment
    int32_t n_ranks;
    uint32_t pad0;
    uint64_t slot_bytes;
    uint64_t channel_bytes;
    std::atomic<uint32_t> joined;      // futex word: ranks joined so far
    std::atomic<uint32_t> aborted;
    std::atomic<uint32_t> arrived;     // ranks in the current barrier
    std::atomic<uint32_t> generation;  // futex word: barriers completed
    std::atomic<int32_t> pids[kMaxCommRanks];
};

// A byte stream from one rank to another through a ring of channel_bytes.
struct ShmCommGroup::Channel {
    std::atomic<uint64_t> head;    // bytes written so far
    std::atomic<uint64_t> tail;    // bytes read so far
    std::atomic<uint32_t> events;  // futex word: bumped on every change of head or tail
    uint32_t pad[11];
};
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint32_t>::is_always_lock_free);

namespace {

struct SegmentLayout {
    size_t channels_offset, slots_offset, data_offset, total, slot_bytes, channel_bytes;
};

template <typename Header, typename Channel>
SegmentLayout layout_for(int32_t n) {
    SegmentLayout l{};
    const size_t pairs = size_t(n) * size_t(n);
    l.slot_bytes = round_down_page(kSlotsBytes / size_t(n));
    l.channel_bytes = n > 1 ? round_down_page(kChannelsBytes / pairs) : 0;
    l.channels_offset = (sizeof(Header) + 4095) & ~size_t(4095);
    l.slots_offset = (l.channels_offset + pairs * sizeof(Channel) + 4095) & ~size_t(4095);
    l.data_offset = l.slots_offset + size_t(n) * l.slot_bytes;
    l.total = l.data_offset + pairs * l.channel_bytes;
    return l;
}

}  // namespace

void make_shm_comm_id(pagoda_comm_unique_id_t &id) {
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    const uint64_t random = (uint64_t(rd()) << 32) | rd();
    std::memset(id.bytes, 0, sizeof id.bytes);
    std::memcpy(id.bytes, kIdMagic, sizeof kIdMagic);
    std::snprintf(reinterpret_cast<char *>(id.bytes) + sizeof kIdMagic, sizeof id.bytes - sizeof kIdMagic,
                  "/pagoda-%d-%llu-%016llx", int(getpid()), static_cast<unsigned long long>(counter++),
                  static_cast<unsigned long long>(random));
}

bool is_shm_comm_id(const pagoda_comm_unique_id_t &id) {
    return std::memcmp(id.bytes, kIdMagic, sizeof kIdMagic) == 0;
}

ShmCommGroup::ShmCommGroup(void *base, size_t bytes, int32_t n_ranks, int32_t rank, int64_t timeout_ms)
    : base_(base), bytes_(bytes), header_(static_cast<Header *>(base)), n_ranks_(n_ranks), rank_(rank),
      timeout_ms_(timeout_ms) {
    const SegmentLayout l = layout_for<Header, Channel>(n_ranks);
    slot_bytes_ = l.slot_bytes;
    channel_bytes_ = l.channel_bytes;
    channels_offset_ = l.channels_offset;
    data_offset_ = l.data_offset;
    for (int32_t r = 0; r < n_ranks; ++r)
        slots_.push_back(static_cast<unsigned char *>(base) + l.slots_offset + size_t(r) * slot_bytes_);
}

ShmCommGroup::~ShmCommGroup() { munmap(base_, bytes_); }

ShmCommGroup *ShmCommGroup::join(const pagoda_comm_unique_id_t &id, int32_t n_ranks, int32_t rank,
                                 int64_t timeout_ms, std::string &error) {
    if (n_ranks > kMaxCommRanks) {
        error = "at most " + std::to_string(kMaxCommRanks) + " ranks share memory, not " + std::to_string(n_ranks);
        return nullptr;
    }
    const std::string name = segment_name(id);
    const SegmentLayout l = layout_for<Header, Channel>(n_ranks);
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    auto fail = [&](const std::string &why) {
        error = "shared memory " + name + ": " + why;
        return nullptr;
    };
    // The first rank to come makes the segment; the others open it once it has its size.
    bool maker = true;
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        maker = false;
        fd = shm_open(name.c_str(), O_RDWR, 0600);
    }
    if (fd < 0) return fail(std::string("cannot open: ") + std::strerror(errno));
    if (maker && ftruncate(fd, off_t(l.total)) != 0) {
        const int e = errno;
        close(fd);
        shm_unlink(name.c_str());
        return fail(std::string("cannot size to ") + std::to_string(l.total) + " bytes: " + std::strerror(e));
    }
    struct stat st{};
    while (!maker && fstat(fd, &st) == 0 && st.st_size == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!maker && size_t(st.st_size) != l.total) {
        close(fd);
        return fail(st.st_size == 0 ? "the rank that made it never sized it"
                                    : "the ranks disagree on the communicator's size (" +
                                          std::to_string(n_ranks) + " ranks here)");
    }
    void *base = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(errno));
    auto *group = new ShmCommGroup(base, l.total, n_ranks, rank, timeout_ms);
    Header &h = *group->header_;
    if (maker) {
        h.n_ranks = n_ranks;
        h.slot_bytes = l.slot_bytes;
        h.channel_bytes = l.channel_bytes;
        h.magic.store(kSegmentMagic, std::memory_order_release);
    }
    while (h.magic.load(std::memory_order_acquire) != kSegmentMagic && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const char *problem = nullptr;
    if (h.magic.load(std::memory_order_acquire) != kSegmentMagic) problem = "the rank that made it never set it up";
    else if (h.n_ranks != n_ranks) problem = "the ranks disagree on the communicator's size";
    else if (h.pids[rank].exchange(int32_t(getpid())) != 0) problem = "this rank joined twice";
    if (problem != nullptr) {
        delete group;
        return fail(problem);
    }
    const uint32_t now_joined = h.joined.fetch_add(1) + 1;
    if (now_joined == uint32_t(n_ranks)) {
        shm_unlink(name.c_str());  // every rank has it mapped: the name is no longer needed
        wake_all(h.joined);
    }
    for (uint32_t seen = now_joined; seen < uint32_t(n_ranks); seen = h.joined.load(std::memory_order_acquire)) {
        if (group->wait_change(&h.joined, seen, "the other ranks to join", error)) continue;
        shm_unlink(name.c_str());
        error = "shared memory " + name + ": " + error;
        delete group;
        return nullptr;
    }
    return group;
}

ShmCommGroup::Channel &ShmCommGroup::channel(int32_t from, int32_t to) const noexcept {
    auto *channels = reinterpret_cast<Channel *>(static_cast<unsigned char *>(base_) +
                                                 channels_offset_);
    return channels[size_t(from) * size_t(n_ranks_) + size_t(to)];
}

unsigned char *ShmCommGroup::channel_data(int32_t from, int32_t to) const noexcept {
    return static_cast<unsigned char *>(base_) + data_offset_ +
           (size_t(from) * size_t(n_ranks_) + size_t(to)) * channel_bytes_;
}

std::string ShmCommGroup::broken(int32_t only) const {
    for (int32_t r = 0; r < n_ranks_; ++r) {
        const int32_t pid = header_->pids[r].load(std::memory_order_relaxed);
        if (r != rank_ && (only < 0 || r == only) && pid != 0 && !process_alive(pid))
            return "rank " + std::to_string(r) + " (process " + std::to_string(pid) + ") has died";
    }
    if (header_->aborted.load(std::memory_order_acquire) != 0) return "the communicator was aborted";
    return "";
}

bool ShmCommGroup::may_wait(Clock::time_point since, const std::string &what, std::string &error, int32_t only) {
    if (std::string why = broken(only); !why.empty()) {
        abort();
        error = "rank " + std::to_string(rank_) + " waited for " + what + ", but " + why;
        return false;
    }
    if (Clock::now() - since >= std::chrono::milliseconds(timeout_ms_)) {
        abort();
        error = "rank " + std::to_string(rank_) + " waited " + std::to_string(timeout_ms_) + " ms for " + what +
                " and gave up; the communicator is aborted";
        return false;
    }
    return true;
}

bool ShmCommGroup::wait_change(const void *word, uint32_t seen, const std::string &what, std::string &error) {
    const auto &w = *static_cast<const std::atomic<uint32_t> *>(word);
    const Clock::time_point since = Clock::now();
    // A short spin first: most waits in a collective end within microseconds.
    for (int i = 0; i < 200; ++i)
        if (w.load(std::memory_order_acquire) != seen) return true;
    for (;;) {
        if (w.load(std::memory_order_acquire) != seen) return true;
        // A peer may change the word and then leave (its last collective done): look again
        // before calling it dead.
        if (!broken().empty() && w.load(std::memory_order_acquire) != seen) return true;
        if (!may_wait(since, what, error)) return false;
        const timespec slice{0, long(kWakeMs) * 1'000'000};
        futex(word, FUTEX_WAIT, seen, &slice);
    }
}

bool ShmCommGroup::barrier(std::string &error) {
    Header &h = *header_;
    // Only the flag here: a dead peer is looked for while waiting, not on every barrier (reading
    // /proc for each peer would cost more than the barrier itself).
    if (aborted()) {
        error = broken();  // names a dead peer when that is why
        return false;
    }
    const uint32_t generation = h.generation.load(std::memory_order_acquire);
    if (h.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(n_ranks_)) {
        h.arrived.store(0, std::memory_order_relaxed);
        h.generation.fetch_add(1, std::memory_order_release);
        wake_all(h.generation);
        return true;
    }
    return wait_change(&h.generation, generation, "the other ranks of a collective", error);
}

bool ShmCommGroup::step(Transfer &t, size_t &moved, std::string &error) {
    moved = 0;
    Channel &ch = t.outgoing ? channel(rank_, t.peer) : channel(t.peer, rank_);
    unsigned char *ring = t.outgoing ? channel_data(rank_, t.peer) : channel_data(t.peer, rank_);
    if (t.outgoing) t.length = t.bytes;
    const size_t total = sizeof t.length + t.bytes;
    while (t.moved < total) {
        // The length word goes first, then the data.
        const bool in_length = t.moved < sizeof t.length;
        unsigned char *p = in_length ? reinterpret_cast<unsigned char *>(&t.length) + t.moved
                                     : t.data + (t.moved - sizeof t.length);
        const size_t left = in_length ? sizeof t.length - t.moved : total - t.moved;
        const uint64_t head = ch.head.load(std::memory_order_acquire), tail = ch.tail.load(std::memory_order_acquire);
        const uint64_t mine = t.outgoing ? head : tail;
        const size_t room = t.outgoing ? channel_bytes_ - size_t(head - tail) : size_t(head - tail);
        if (room == 0) return true;
        const size_t at = size_t(mine % channel_bytes_);
        const size_t n = std::min({room, left, channel_bytes_ - at});
        if (t.outgoing) std::memcpy(ring + at, p, n);
        else std::memcpy(p, ring + at, n);
        (t.outgoing ? ch.head : ch.tail).store(mine + n, std::memory_order_release);
        ch.events.fetch_add(1, std::memory_order_release);
        wake_all(ch.events);
        t.moved += n;
        moved += n;
        if (!t.outgoing && t.moved == sizeof t.length && t.length != t.bytes) {
            abort();  // the stream is out of step from here on
            error = "rank " + std::to_string(rank_) + " expected " + std::to_string(t.bytes) + " bytes from rank " +
                    std::to_string(t.peer) + " but " + std::to_string(t.length) + " were sent";
            return false;
        }
    }
    return true;
}

bool ShmCommGroup::transfer(std::vector<Transfer> &transfers, std::string &error) {
    Clock::time_point last_progress = Clock::now();
    for (;;) {
        // Read before trying, so that a change made after the try ends the wait at once.
        const Transfer *waiting = nullptr;
        uint32_t events = 0;
        bool progressed = false;
        for (Transfer &t : transfers) {
            if (t.moved == sizeof t.length + t.bytes) continue;
            Channel &ch = t.outgoing ? channel(rank_, t.peer) : channel(t.peer, rank_);
            const uint32_t seen = ch.events.load(std::memory_order_acquire);
            size_t moved = 0;
            if (!step(t, moved, error)) return false;
            progressed |= moved != 0;
            if (t.moved < sizeof t.length + t.bytes && waiting == nullptr) {
                waiting = &t;
                events = seen;
            }
        }
        if (waiting == nullptr) return true;
        if (progressed) {
            last_progress = Clock::now();
            continue;
        }
        const std::string what = waiting->outgoing ? "rank " + std::to_string(waiting->peer) + " to take a message"
                                                   : "a message from rank " + std::to_string(waiting->peer);
        // Only the peer matters here (a rank done with its part may leave), and a peer may
        // have left its last bytes in the ring: one more try before calling it dead.
        if (!broken(waiting->peer).empty()) {
            bool moved_any = false;
            for (Transfer &t : transfers) {
                size_t moved = 0;
                if (t.moved < sizeof t.length + t.bytes && !step(t, moved, error)) return false;
                moved_any |= moved != 0;
            }
            if (moved_any) continue;
        }
        if (!may_wait(last_progress, what, error, waiting->peer)) return false;
        // Only the first waiting transfer's channel is watched, so with several wake often.
        Channel &ch = waiting->outgoing ? channel(rank_, waiting->peer) : channel(waiting->peer, rank_);
        const timespec slice{0, (transfers.size() == 1 ? long(kWakeMs) : 1L) * 1'000'000};
        futex(&ch.events, FUTEX_WAIT, events, &slice);
    }
}

void ShmCommGroup::abort() noexcept {
    header_->aborted.store(1, std::memory_order_release);
    wake_all(header_->generation);
    wake_all(header_->joined);
}

bool ShmCommGroup::aborted() const noexcept { return header_->aborted.load(std::memory_order_acquire) != 0; }

}  // namespace pagoda::cpu
