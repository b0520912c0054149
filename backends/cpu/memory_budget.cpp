#include "memory_budget.hpp"

namespace pagoda::cpu {

uint64_t MemoryBudget::allocated() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
}

bool MemoryBudget::reserve(uint64_t bytes, uint64_t &left) {
    std::lock_guard<std::mutex> lock(mutex_);
    left = budget_ - allocated_;
    if (bytes > left) return false;
    allocated_ += bytes;
    return true;
}

void MemoryBudget::unreserve(uint64_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    allocated_ -= bytes;
}

void MemoryBudget::track(void *ptr, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_.emplace(ptr, bytes);
}

std::optional<uint64_t> MemoryBudget::release(void *ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return std::nullopt;
    const uint64_t bytes = it->second;
    allocated_ -= bytes;
    sizes_.erase(it);
    return bytes;
}

}  // namespace pagoda::cpu
