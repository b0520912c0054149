// The dense CUDA kernels' launch shapes (backends/cuda/launch_shape.hpp), which need no device:
// block sizes are whole warps within the hardware's limit, grids stay bounded for any input, and
// the float4 paths are taken only where every row is 16-byte aligned.
#include <cstdint>

#include "launch_shape.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using namespace pagoda::cuda;

namespace {

void test_row_block_threads(void **) {
    // At least one warp, even for a row of one element (and for nothing).
    assert_int_equal(row_block_threads(0), 32);
    assert_int_equal(row_block_threads(1), 32);
    assert_int_equal(row_block_threads(32), 32);
    // Rounded up to whole warps: the block reductions shuffle full warps.
    assert_int_equal(row_block_threads(33), 64);
    assert_int_equal(row_block_threads(1000), 1024);
    assert_int_equal(row_block_threads(1024), 1024);
    // Capped at the hardware limit, or at the kernel's own bound.
    assert_int_equal(row_block_threads(int64_t(1) << 40), 1024);
    assert_int_equal(row_block_threads(300, 256), 256);
    assert_int_equal(row_block_threads(200, 256), 224);
    for (int64_t units = 0; units < 5000; ++units) {
        const int t = row_block_threads(units);
        if (t % 32 != 0 || t < 32 || t > 1024 || (units <= 1024 && t < units))
            fail_msg("row_block_threads(%lld) = %d", (long long)units, t);
    }
}

void test_grid_blocks(void **) {
    assert_int_equal(grid_blocks(0, 256), 1);  // never an empty grid
    assert_int_equal(grid_blocks(1, 256), 1);
    assert_int_equal(grid_blocks(256, 256), 1);
    assert_int_equal(grid_blocks(257, 256), 2);
    assert_int_equal(grid_blocks(7, 1), 7);
    // Huge inputs loop instead of asking for more blocks than a grid may have.
    assert_int_equal(grid_blocks(kMaxGridBlocks * 256 + 1, 256), kMaxGridBlocks);
    assert_int_equal(grid_blocks(INT64_MAX, 1), kMaxGridBlocks);
    assert_int_equal(grid_blocks(INT64_MAX, 1024), kMaxGridBlocks);
}

void test_float4_rows(void **) {
    alignas(16) float buffer[16] = {};
    assert_true(is_aligned(buffer, 16));
    assert_false(is_aligned(buffer + 1, 16));
    assert_true(is_aligned(buffer + 1, 4));
    assert_true(rows_allow_float4(buffer, 4));
    assert_true(rows_allow_float4(buffer + 4, 8));
    // A stride that is not a multiple of 4 floats misaligns every other row.
    assert_false(rows_allow_float4(buffer, 6));
    assert_false(rows_allow_float4(buffer + 2, 4));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_block_threads),
        cmocka_unit_test(test_grid_blocks),
        cmocka_unit_test(test_float4_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
