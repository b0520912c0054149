// The weights' arena (runtime/device_arena.hpp) on a CPU device: pieces aligned and apart,
// buffers growing from small to their largest size, a piece larger than that in a buffer of its
// own, later small pieces filling the ends earlier buffers left, and every piece writable.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/device_arena.hpp"
// Test headers last: they bring cmocka, whose macros clash with the standard library.
#include "paged_test_cache.hpp"

using namespace pagoda;
using runtime::DeviceArena;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

struct Piece {
    unsigned char *at;
    size_t bytes;
};

// Fills each piece with its own byte, then checks none was overwritten by another.
void expect_apart(const std::vector<Piece> &pieces) {
    for (size_t i = 0; i < pieces.size(); ++i) std::memset(pieces[i].at, int(i % 251) + 1, pieces[i].bytes);
    for (size_t i = 0; i < pieces.size(); ++i)
        for (size_t b = 0; b < pieces[i].bytes; b += 97)
            if (pieces[i].at[b] != (unsigned char)(i % 251 + 1))
                fail_msg("piece %zu (%zu bytes): byte %zu was overwritten", i, pieces[i].bytes, b);
    std::vector<Piece> sorted = pieces;
    std::sort(sorted.begin(), sorted.end(), [](const Piece &a, const Piece &b) { return a.at < b.at; });
    for (size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i - 1].at + sorted[i - 1].bytes > sorted[i].at) fail_msg("two pieces overlap");
}

void test_pieces(void **) {
    const runtime::Device device(test::cpu_backend(), 0);
    DeviceArena arena(device);
    std::vector<Piece> pieces;
    auto take = [&](size_t bytes) {
        auto *at = static_cast<unsigned char *>(arena.allocate(bytes, "a test piece"));
        assert_int_equal(reinterpret_cast<uintptr_t>(at) % DeviceArena::kAlignment, 0);
        pieces.push_back({at, bytes});
        return at;
    };
    // Small pieces (odd sizes, and none) share the first buffer, of the first size.
    for (size_t bytes : {size_t(1), size_t(0), size_t(1000), size_t(3) * kMiB}) take(bytes);
    assert_int_equal(arena.buffer_count(), 1);
    assert_int_equal(arena.reserved_bytes(), DeviceArena::kFirstBufferBytes);
    // One that does not fit starts a buffer twice the size.
    take(2 * kMiB);
    assert_int_equal(arena.buffer_count(), 2);
    assert_int_equal(arena.reserved_bytes(), DeviceArena::kFirstBufferBytes * 3);
    // A piece larger than the largest buffer gets one of its own size.
    const size_t huge = DeviceArena::kLargestBufferBytes + 4096;
    take(huge);
    assert_int_equal(arena.buffer_count(), 3);
    assert_int_equal(arena.reserved_bytes(), DeviceArena::kFirstBufferBytes * 3 + huge);
    // A small one fills what the first buffer has left, and takes nothing new.
    unsigned char *filler = take(512 * 1024);
    assert_int_equal(arena.buffer_count(), 3);
    assert_true(filler >= pieces[0].at && filler < pieces[0].at + DeviceArena::kFirstBufferBytes);
    // Buffers grow no further than the largest size.
    for (int i = 0; i < 6; ++i) take(DeviceArena::kLargestBufferBytes / 2 + 1);
    assert_true(arena.reserved_bytes() <=
                DeviceArena::kFirstBufferBytes * 3 + huge + 6 * DeviceArena::kLargestBufferBytes);
    expect_apart(pieces);
}

// A piece the device cannot hold is refused by name, and the arena stays usable.
void test_refusal(void **) {
    const runtime::Device device(test::cpu_backend(), 0);
    DeviceArena arena(device);
    try {
        arena.allocate(size_t(1) << 62, "an impossible piece");
        fail_msg("a 4 EiB piece was granted");
    } catch (const Error &e) {
        if (std::strstr(e.what(), "an impossible piece") == nullptr) fail_msg("the refusal says '%s'", e.what());
    }
    void *p = arena.allocate(100, "a small piece");
    assert_non_null(p);
    std::memset(p, 7, 100);
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {cmocka_unit_test(test_pieces), cmocka_unit_test(test_refusal)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
