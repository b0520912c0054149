// The server: a listener on a libuv loop (its own thread's or the host's), the connections, the
// served models with their driver threads, and the graceful stop.
#pragma once

#include <uv.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "plan/placement.hpp"
#include "server/placement_routing.hpp"
#include "server/server_options.hpp"
#include "server/served_model.hpp"

namespace pagoda::server {

class Connection;

class Server {
public:
    explicit Server(ServerOptions options);
    ~Server();
    Server(const Server &) = delete;
    Server &operator=(const Server &) = delete;

    // Any thread. `engine` is the facade's port (never null). Throws Error (ALREADY_EXISTS,
    // INVALID_ARGUMENT).
    void add_model(const std::string &name, std::shared_ptr<EnginePort> engine);
    // Serves a placement: `replicas[i]` is the engine of (model name, group) `slots[i]`, one per
    // replica the placement lists. All or nothing; once per server, before any model. Throws
    // Error (INVALID_ARGUMENT naming the group and model, ALREADY_EXISTS).
    struct ReplicaSlot {
        std::string model;
        int32_t group = 0;
    };
    void add_placement(plan::Placement placement, const std::vector<ReplicaSlot> &slots,
                       std::vector<std::shared_ptr<EnginePort>> replicas);
    // host_loop NULL: a loop on a thread of our own. Throws Error (IO, INVALID_ARGUMENT).
    void start(uv_loop_t *host_loop);
    // Any thread; see pagoda_server_stop().
    void stop();
    // Any thread but the loop's: asks the loop to drain and stop, without waiting.
    void request_stop();
    // A driver's thread: its engine failed for good (its mesh over processes broke), so the
    // server drains and stops by itself; pagoda_server_is_running() then turns 0.
    void engine_failed();
    int port() const noexcept { return port_.load(); }
    bool running() const noexcept { return running_.load(); }
    // Whether destroy may free us (not still running on a host's loop).
    bool may_free() const noexcept { return !running_.load() || own_thread_; }

    // Loop thread only, below.
    const ServerOptions &options() const noexcept { return options_; }
    bool draining() const noexcept { return draining_; }
    // `name` "" picks the only model; NULL when there is no such model. A placement's model
    // gives its first replica.
    std::shared_ptr<ServedModel> find_model(const std::string &name) const;
    // The replica a generation request for `name` goes to: for a placement's model, the one
    // its controller picks (ApiError 429 when it rejects the request at arrival), else
    // find_model's. NULL when there is no such model.
    std::shared_ptr<ServedModel> dispatch_model(const std::string &name);
    // The served placement's routing, or NULL.
    const PlacementRouting *placement() const;
    std::vector<std::shared_ptr<ServedModel>> models() const;
    std::string next_id(const char *prefix);
    void connection_opened(Connection *c) { connections_.insert(c); }
    void connection_closed(Connection *c);

private:
    static void on_connection(uv_stream_t *listener, int status);
    static void on_outputs(uv_async_t *a);
    static void on_control(uv_async_t *a);
    static void on_drain_deadline(uv_timer_t *t);
    static void on_handle_closed(uv_handle_t *h);
    void poll_outputs();
    void begin_drain();
    void check_drained();
    void finish_if_drained();
    void finish_stop();
    void notify_progress();

    ServerOptions options_;
    mutable std::mutex models_mutex_;
    std::vector<std::shared_ptr<ServedModel>> models_;
    std::unique_ptr<PlacementRouting> placement_;  // set once, before any model

    uv_loop_t *loop_ = nullptr;
    uv_loop_t own_loop_{};
    bool own_thread_ = false;
    std::thread thread_;
    std::thread::id start_thread_;
    std::atomic<std::thread::id> loop_thread_{};  // learnt from the first callback on a host's loop
    uv_tcp_t listener_{};
    uv_async_t outputs_async_{};
    uv_async_t control_async_{};
    uv_timer_t drain_timer_{};
    int open_handles_ = 0;
    std::atomic<bool> async_ready_{false};
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> running_{false};
    std::atomic<bool> started_{false};
    std::atomic<int> port_{-1};
    bool draining_ = false;
    bool finishing_ = false;
    int drain_phase_ = 0;
    std::set<Connection *> connections_;
    uint64_t id_counter_ = 0;
    std::mutex stopped_mutex_;
    std::condition_variable stopped_cv_;
};

}  // namespace pagoda::server
