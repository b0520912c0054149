// Scratch memory that a launching thread keeps from one launch to the next: it grows to the
// largest request and is then reused, so a steady run of decode steps allocates nothing. Each
// kernel names its own Tag, so two kernels never share (or reallocate under) one area; the
// pool's workers may write into their launcher's area while the launch runs.
#pragma once

#include <cstddef>
#include <vector>

namespace pagoda::cpu {

// `floats` floats, valid until this thread's next call with the same Tag. Throws bad_alloc.
template <typename Tag>
float *thread_scratch(size_t floats) {
    thread_local std::vector<float> area;
    if (area.size() < floats) area.resize(floats);
    return area.data();
}

}  // namespace pagoda::cpu
