#include "comm_group.hpp"

#include <chrono>
#include <cstring>

namespace pagoda::cpu {

CommGroup::CommGroup(int32_t n_ranks)
    : n_ranks_(n_ranks), joined_(size_t(n_ranks), false), buffers_(size_t(n_ranks)) {}

bool CommGroup::join(int32_t rank, int64_t timeout_ms, std::string &error) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (joined_[size_t(rank)]) {
        error = "rank " + std::to_string(rank) + " joined this communicator twice";
        return false;
    }
    joined_[size_t(rank)] = true;
    if (++n_joined_ == n_ranks_) cv_.notify_all();
    bool all = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return n_joined_ == n_ranks_ || aborted_; });
    if (aborted_) {
        error = "the communicator was aborted while ranks were joining";
        return false;
    }
    if (!all) {
        error = "only " + std::to_string(n_joined_) + " of " + std::to_string(n_ranks_) +
                " ranks joined within " + std::to_string(timeout_ms) + " ms";
        aborted_ = true;  // the others would wait forever for the missing ranks
        cv_.notify_all();
        return false;
    }
    return true;
}

bool CommGroup::barrier(std::string &error) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) {
        error = "the communicator was aborted";
        return false;
    }
    const uint64_t generation = barrier_generation_;
    if (++arrived_ == n_ranks_) {
        arrived_ = 0;
        ++barrier_generation_;
        cv_.notify_all();
        return true;
    }
    cv_.wait(lock, [&] { return barrier_generation_ != generation || aborted_; });
    if (barrier_generation_ == generation) {
        error = "the communicator was aborted while this rank waited for the others";
        return false;
    }
    return true;
}

bool CommGroup::send(int32_t from, int32_t to, const void *data, size_t bytes,
                     std::string &error) {
    const auto *p = static_cast<const unsigned char *>(data);
    std::vector<unsigned char> message(p, p + bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) {
        error = "the communicator was aborted";
        return false;
    }
    mailboxes_[{from, to}].push_back(std::move(message));
    cv_.notify_all();
    return true;
}

bool CommGroup::recv(int32_t from, int32_t to, void *data, size_t bytes, std::string &error) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto &box = mailboxes_[{from, to}];
    cv_.wait(lock, [&] { return !box.empty() || aborted_; });
    if (box.empty()) {
        error = "the communicator was aborted while rank " + std::to_string(to) +
                " waited for a message from rank " + std::to_string(from);
        return false;
    }
    std::vector<unsigned char> message = std::move(box.front());
    box.pop_front();
    if (message.size() != bytes) {
        error = "rank " + std::to_string(to) + " expected " + std::to_string(bytes) +
                " bytes from rank " + std::to_string(from) + " but " +
                std::to_string(message.size()) + " were sent";
        return false;
    }
    std::memcpy(data, message.data(), bytes);
    return true;
}

bool CommGroup::aborted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborted_;
}

void CommGroup::abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
}

namespace {

std::mutex g_groups_mutex;
std::map<std::string, std::shared_ptr<CommGroup>> g_groups;

std::string key_of(const pagoda_comm_unique_id_t &id) {
    return std::string(reinterpret_cast<const char *>(id.bytes), sizeof id.bytes);
}

}  // namespace

std::shared_ptr<CommGroup> comm_group_for(const pagoda_comm_unique_id_t &id, int32_t n_ranks,
                                          std::string &error) {
    std::lock_guard<std::mutex> lock(g_groups_mutex);
    auto &group = g_groups[key_of(id)];
    if (!group) group = std::make_shared<CommGroup>(n_ranks);
    if (group->n_ranks() != n_ranks) {
        error = "ranks disagree on the communicator's size: " + std::to_string(n_ranks) +
                " here, " + std::to_string(group->n_ranks()) + " for an earlier rank";
        return nullptr;
    }
    return group;
}

void comm_group_joined(const pagoda_comm_unique_id_t &id) {
    std::lock_guard<std::mutex> lock(g_groups_mutex);
    g_groups.erase(key_of(id));
}

}  // namespace pagoda::cpu
