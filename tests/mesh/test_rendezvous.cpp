// The mesh's bootstrap: the TCP rendezvous with each rank a forked process on loopback (correct
// contents, a rank that never arrives, one killed mid-way, one that stays silent, strangers on the
// port, ranks that disagree, bad arguments), and the bootstrap over a host's broadcast function.
//
// Ranks are forked from this single-threaded process before any thread exists; each runs its body
// and leaves with _exit(code), so cmocka's state in the child is never used. The parent waits with
// a deadline and kills what is left, so no process outlives the test.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "mesh/bootstrap.hpp"
#include "mesh/tcp_rendezvous.hpp"

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
}

namespace {

using pagoda::Error;
using namespace pagoda::mesh;
using Clock = std::chrono::steady_clock;

// Inside a rank's process: a failed check leaves with exit code 1 and says where.
#define RANK_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            std::fprintf(stderr, "rank check failed at line %d: %s\n", __LINE__, #cond);     \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// A free loopback port: bind port 0 and read which one the kernel chose. Another process could
// take it before the test listens there; rare enough on a test machine.
std::string free_loopback_address() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    assert_int_equal(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
    assert_int_equal(getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length), 0);
    close(fd);
    return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

// How many files this process has open, to check that a rendezvous closes all it opened.
int open_files() {
    DIR *dir = opendir("/proc/self/fd");
    int count = 0;
    while (dir != nullptr && readdir(dir) != nullptr) ++count;
    if (dir != nullptr) closedir(dir);
    return count;
}

std::vector<pid_t> start_ranks(int32_t count, const std::function<int(int32_t)> &body) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<pid_t> pids;
    for (int32_t rank = 0; rank < count; ++rank) {
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int code = 99;
            try {
                code = body(rank);
            } catch (const std::exception &e) {
                std::fprintf(stderr, "rank %d: unexpected error: %s\n", rank, e.what());
            }
            _exit(code);
        }
        pids.push_back(pid);
    }
    return pids;
}

// The wait statuses of `pids`; fails the test, after killing them, if any outlives `limit_s`.
std::vector<int> wait_ranks(const std::vector<pid_t> &pids, double limit_s = 60) {
    std::vector<int> statuses(pids.size(), 0);
    std::vector<bool> done(pids.size(), false);
    const auto start = Clock::now();
    size_t left = pids.size();
    while (left > 0 && seconds_since(start) < limit_s) {
        for (size_t i = 0; i < pids.size(); ++i)
            if (!done[i] && waitpid(pids[i], &statuses[i], WNOHANG) == pids[i]) {
                done[i] = true;
                --left;
            }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &statuses[i], 0);
    }
    if (left > 0) fail_msg("%zu rank(s) still running after %.0f s, killed", left, limit_s);
    return statuses;
}

void assert_all_exited_ok(const std::vector<int> &statuses) {
    for (size_t r = 0; r < statuses.size(); ++r) {
        if (!WIFEXITED(statuses[r]) || WEXITSTATUS(statuses[r]) != 0)
            fail_msg("rank %zu: wait status 0x%x (exit code %d)", r, statuses[r],
                     WIFEXITED(statuses[r]) ? WEXITSTATUS(statuses[r]) : -1);
    }
}

// Inside a rank: runs `call`, which must throw Error(status) whose message holds `needle`,
// within `limit_s`. Returns 0 when it did.
int expect_error(const std::function<void()> &call, pagoda_status_t status, const char *needle, double limit_s,
                 int32_t rank) {
    const auto start = Clock::now();
    try {
        call();
    } catch (const Error &e) {
        const double took = seconds_since(start);
        std::fprintf(stderr, "rank %d, after %.2f s, as expected: %s\n", rank, took, e.what());
        RANK_CHECK(e.status() == status);
        RANK_CHECK(needle == nullptr || std::strstr(e.what(), needle) != nullptr);
        RANK_CHECK(took < limit_s);
        return 0;
    }
    std::fprintf(stderr, "rank %d: no error\n", rank);
    return 1;
}

// Broadcasts from root 0 and from root min(2, size - 1), then all-gathers, checking every byte.
int exchange_and_check(Bootstrap &b) {
    const int32_t rank = b.rank(), size = b.size();
    std::vector<unsigned char> buf(300, 0);
    if (rank == 0)
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 1);
    b.broadcast(buf.data(), buf.size(), 0);
    for (size_t i = 0; i < buf.size(); ++i) RANK_CHECK(buf[i] == static_cast<unsigned char>(i * 7 + 1));

    const int32_t root = std::min<int32_t>(2, size - 1);
    uint64_t word = rank == root ? 0xfeedface00ull + static_cast<uint64_t>(root) : 0;
    b.broadcast(&word, sizeof word, root);
    RANK_CHECK(word == 0xfeedface00ull + static_cast<uint64_t>(root));

    unsigned char mine[5];
    for (int i = 0; i < 5; ++i) mine[i] = static_cast<unsigned char>(rank * 10 + i);
    std::vector<unsigned char> all(static_cast<size_t>(size) * 5, 0xEE);
    b.all_gather(mine, all.data(), 5);
    for (int32_t r = 0; r < size; ++r)
        for (int i = 0; i < 5; ++i) RANK_CHECK(all[static_cast<size_t>(r * 5 + i)] == r * 10 + i);

    b.broadcast(nullptr, 0, 0);  // nothing to send is still a call every rank makes
    return 0;
}

// Each rank checks every byte, and that it has as many files open afterwards as before.
int run_and_check(const std::string &address, int32_t rank, int32_t size) {
    const int files_before = open_files();
    {
        const auto b = tcp_rendezvous(address, rank, size, 20000);
        RANK_CHECK(b->rank() == rank && b->size() == size);
        if (exchange_and_check(*b) != 0) return 1;
    }
    RANK_CHECK(open_files() == files_before);
    return 0;
}

void test_two_and_four_ranks(void **) {
    for (int32_t size : {2, 4}) {
        const std::string address = free_loopback_address();
        const auto body = [&](int32_t rank) { return run_and_check(address, rank, size); };
        assert_all_exited_ok(wait_ranks(start_ranks(size, body)));
    }
    // A name for the host, resolved with getaddrinfo (::1 or 127.0.0.1, whichever binds first).
    const std::string address = "localhost" + free_loopback_address().substr(sizeof "127.0.0.1" - 1);
    assert_all_exited_ok(wait_ranks(start_ranks(2, [&](int32_t rank) { return run_and_check(address, rank, 2); })));
}

void test_ipv6(void **) {
    // Where the machine has IPv6 on loopback; skipped elsewhere.
    const int fd = socket(AF_INET6, SOCK_STREAM, 0);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    socklen_t length = sizeof addr;
    const bool usable = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0 &&
                        getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length) == 0;
    if (fd >= 0) close(fd);
    if (!usable) skip();
    const std::string address = "[::1]:" + std::to_string(ntohs(addr.sin6_port));
    assert_all_exited_ok(wait_ranks(start_ranks(3, [&](int32_t rank) { return run_and_check(address, rank, 3); })));
}

void test_rank_that_never_arrives(void **) {
    // Rank 2 of 3 is never started; rank 0 and rank 1 give up after the 2 s timeout.
    const std::string address = free_loopback_address();
    auto statuses = wait_ranks(start_ranks(3, [&](int32_t rank) {
        if (rank == 2) return 0;
        return expect_error([&] { tcp_rendezvous(address, rank, 3, 2000); }, PAGODA_ERR_BACKEND,
                            rank == 0 ? "missing: 2" : nullptr, 2.0 + 3.0, rank);
    }));
    assert_all_exited_ok(statuses);

    // Without rank 0, a joiner knocks until its timeout.
    const std::string nobody = free_loopback_address();
    statuses = wait_ranks(start_ranks(1, [&](int32_t) {
        return expect_error([&] { tcp_rendezvous(nobody, 1, 2, 2000); }, PAGODA_ERR_BACKEND, "rank 0 did not open",
                            2.0 + 3.0, 1);
    }));
    assert_all_exited_ok(statuses);
}

void test_killed_rank(void **) {
    // Rank 2 dies after the handshake; the kernel closes its socket, so the broadcast fails long
    // before the 30 s timeout.
    const std::string address = free_loopback_address();
    const auto statuses = wait_ranks(start_ranks(3, [&](int32_t rank) {
        const int files_before = open_files();
        auto b = tcp_rendezvous(address, rank, 3, 30000);
        if (rank == 2) raise(SIGKILL);
        unsigned char buf[64] = {};
        if (expect_error([&] { b->broadcast(buf, sizeof buf, 0); }, PAGODA_ERR_BACKEND,
                         rank == 0 ? "rank 2 closed its connection" : nullptr, 10.0, rank) != 0)
            return 1;
        // Failed for good, and the sockets are closed already, not only when the object goes.
        RANK_CHECK(open_files() == files_before);
        return expect_error([&] { b->broadcast(buf, sizeof buf, 0); }, PAGODA_ERR_BACKEND, "failed earlier", 1.0, rank);
    }));
    assert_true(WIFSIGNALED(statuses[2]) && WTERMSIG(statuses[2]) == SIGKILL);
    assert_all_exited_ok({statuses[0], statuses[1]});
}

void test_silent_rank(void **) {
    // Rank 1 joins, then says nothing for 2.5 s; rank 0's broadcast gives up after its 1 s timeout.
    const std::string address = free_loopback_address();
    const auto statuses = wait_ranks(start_ranks(2, [&](int32_t rank) {
        const auto b = tcp_rendezvous(address, rank, 2, rank == 0 ? 1000 : 20000);
        unsigned char buf[8] = {};
        if (rank == 0)
            return expect_error([&] { b->broadcast(buf, sizeof buf, 0); }, PAGODA_ERR_BACKEND,
                                "rank 1 did not answer within 1000 ms", 1.0 + 3.0, rank);
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        return expect_error([&] { b->broadcast(buf, sizeof buf, 0); }, PAGODA_ERR_BACKEND, nullptr, 1.0, rank);
    }));
    assert_all_exited_ok(statuses);
}

// Connects to `address`'s port on loopback, trying for up to 5 s.
int connect_stranger(const std::string &address) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    const auto start = Clock::now();
    while (seconds_since(start) < 5) {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0) return fd;
        close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    fail_msg("could not connect to %s", address.c_str());
    return -1;
}

// True when the peer closed `fd` within 5 s.
bool hung_up_on(int fd) {
    pollfd p{fd, POLLIN, 0};
    char c;
    return poll(&p, 1, 5000) == 1 && recv(fd, &c, 1, 0) <= 0;
}

void test_strangers_are_turned_away(void **) {
    // While rank 1 takes its time, rank 0 hears from junk, from a connection that says nothing,
    // and from a Pagoda rank launched for a world of 3; it still completes the world of 2.
    const std::string address = free_loopback_address();
    const auto pids = start_ranks(3, [&](int32_t rank) {
        if (rank == 2)
            return expect_error([&] { tcp_rendezvous(address, 1, 3, 5000); }, PAGODA_ERR_BACKEND,
                                "rank 0 refused", 5.0 + 3.0, 2);
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(1));
        const auto b = tcp_rendezvous(address, rank, 2, 20000);
        return exchange_and_check(*b);
    });
    const int junk = connect_stranger(address);
    const char request[] = "GET / HTTP/1.1\r\nHost: pagoda\r\n\r\n";
    assert_int_equal(send(junk, request, sizeof request - 1, MSG_NOSIGNAL), (ssize_t)(sizeof request - 1));
    const int silent = connect_stranger(address);
    const auto statuses = wait_ranks(pids);
    assert_all_exited_ok(statuses);
    assert_true(hung_up_on(junk));
    assert_true(hung_up_on(silent));
    close(junk);
    close(silent);
}

void test_ranks_that_disagree(void **) {
    // Rank 1 broadcasts 32 bytes where rank 0 broadcasts 16: both fail, naming both calls.
    const std::string address = free_loopback_address();
    const auto statuses = wait_ranks(start_ranks(2, [&](int32_t rank) {
        const auto b = tcp_rendezvous(address, rank, 2, 20000);
        unsigned char buf[32] = {};
        return expect_error([&] { b->broadcast(buf, rank == 0 ? 16 : 32, 0); }, PAGODA_ERR_BACKEND,
                            rank == 0 ? "ranks disagree" : nullptr, 10.0, rank);
    }));
    assert_all_exited_ok(statuses);
}

void expect_invalid(const std::function<void()> &call) {
    try {
        call();
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
        return;
    }
    fail_msg("no INVALID_ARGUMENT");
}

void test_bad_arguments(void **) {
    for (const char *address : {"nohost", "1.2.3.4:99999", ":80", "", "host:0", "host:http", "::1:80", "[::1]80"})
        expect_invalid([&] { tcp_rendezvous(address, 0, 2, 1000); });
    expect_invalid([] { tcp_rendezvous("127.0.0.1:1", 2, 2, 1000); });
    expect_invalid([] { tcp_rendezvous("127.0.0.1:1", -1, 2, 1000); });
    expect_invalid([] { tcp_rendezvous("127.0.0.1:1", 0, 0, 1000); });
    expect_invalid([] { tcp_rendezvous("127.0.0.1:1", 0, 2, 0); });

    // One rank opens no socket: port 1 is never touched.
    const auto alone = tcp_rendezvous("127.0.0.1:1", 0, 1, 1000);
    int value = 42;
    alone->broadcast(&value, sizeof value, 0);
    assert_int_equal(value, 42);
    int gathered = 0;
    alone->all_gather(&value, &gathered, sizeof value);
    assert_int_equal(gathered, 42);
    expect_invalid([&] { alone->broadcast(&value, sizeof value, 1); });
}

struct FakeHost {
    pagoda_status_t status = PAGODA_OK;
    std::vector<int32_t> roots;
};

pagoda_status_t fake_broadcast(void *user, void *data, size_t bytes, int32_t root) {
    auto *host = static_cast<FakeHost *>(user);
    host->roots.push_back(root);
    // What rank 1 would have sent, as seen by rank 0.
    if (root == 1) std::memset(data, 0xAB, bytes);
    return host->status;
}

void test_host_bootstrap(void **) {
    FakeHost host;
    const auto b = host_bootstrap(fake_broadcast, &host, 0, 2);
    assert_int_equal(b->rank(), 0);
    assert_int_equal(b->size(), 2);
    // The default all-gather: one broadcast from each rank.
    const unsigned char mine[3] = {1, 2, 3};
    unsigned char all[6] = {};
    b->all_gather(mine, all, 3);
    const unsigned char expected[6] = {1, 2, 3, 0xAB, 0xAB, 0xAB};
    assert_memory_equal(all, expected, 6);
    assert_int_equal(host.roots.size(), 2);
    assert_int_equal(host.roots[0], 0);
    assert_int_equal(host.roots[1], 1);

    host.status = PAGODA_ERR_IO;
    try {
        b->broadcast(all, sizeof all, 0);
        fail_msg("no error");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_BACKEND);
        assert_non_null(std::strstr(e.what(), "the host's bootstrap broadcast failed"));
        assert_non_null(std::strstr(e.what(), "PAGODA_ERR_IO"));
    }
    expect_invalid([&] { b->broadcast(all, sizeof all, 2); });
    expect_invalid([&] { host_bootstrap(nullptr, nullptr, 0, 1); });
    expect_invalid([&] { host_bootstrap(fake_broadcast, &host, 1, 1); });
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_host_bootstrap),
        cmocka_unit_test(test_two_and_four_ranks),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_rank_that_never_arrives),
        cmocka_unit_test(test_killed_rank),
        cmocka_unit_test(test_silent_rank),
        cmocka_unit_test(test_strangers_are_turned_away),
        cmocka_unit_test(test_ranks_that_disagree),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
