#include "server/server.hpp"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "common/error.hpp"
#include "common/log.hpp"
#include "server/api_error.hpp"
#include "server/connection.hpp"
#include "server/embedding.hpp"
#include "server/generation.hpp"

namespace pagoda::server {

ServedModel::ServedModel() = default;
ServedModel::~ServedModel() = default;

namespace {

// Past the drain deadline: abort what runs, then close what is left, then give up waiting.
constexpr uint64_t kAbortGraceMs = 2000;
constexpr uint64_t kCloseGraceMs = 1000;

std::shared_ptr<ServedModel> make_served_model(const std::string &name, std::shared_ptr<EnginePort> engine) {
    auto m = std::make_shared<ServedModel>();
    m->name = name;
    m->tokenizer = engine->tokenizer();
    if (m->tokenizer != nullptr) m->fim = find_fim_tokens(*m->tokenizer);
    m->limits.vocab_size = engine->vocab_size();
    m->limits.context_length = engine->context_length();
    m->embedding_size = engine->hidden_size();
    m->created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
    m->engine = std::move(engine);
    return m;
}

}  // namespace

Server::Server(ServerOptions options) : options_(std::move(options)) {}

Server::~Server() {
    stop();
    // Drivers stop (join) with their models.
    std::lock_guard lock(models_mutex_);
    models_.clear();
}

void Server::add_model(const std::string &name, std::shared_ptr<EnginePort> engine) {
    if (name.empty() || name.size() > 256)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "a model name must be 1 to 256 bytes long");
    if (engine->has_output_callback())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the engine delivers its outputs to a callback: the server polls "
                                                 "them, so make the engine without on_output");
    std::lock_guard lock(models_mutex_);
    if (finishing_ || stop_requested_)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the server is stopping or stopped");
    for (const auto &m : models_) {
        if (m->name == name) throw Error(PAGODA_ERR_ALREADY_EXISTS, "a model named '" + name + "' is served already");
        if (m->engine->identity() == engine->identity()) throw Error(PAGODA_ERR_ALREADY_EXISTS, "this engine is served already, as '" + m->name + "'");
    }
    auto m = make_served_model(name, std::move(engine));
    m->driver = std::make_unique<EngineDriver>(*m->engine, [this] { notify_progress(); },
                                                   [this] { engine_failed(); });
    models_.push_back(std::move(m));
}

std::shared_ptr<ServedModel> Server::find_model(const std::string &name) const {
    std::lock_guard lock(models_mutex_);
    if (name.empty()) {
        // The only model, though a placement serves it as several replicas.
        for (const auto &m : models_)
            if (m->name != models_.front()->name) return nullptr;
        return models_.empty() ? nullptr : models_.front();
    }
    for (const auto &m : models_)
        if (m->name == name) return m;
    return nullptr;
}

const PlacementRouting *Server::placement() const {
    std::lock_guard lock(models_mutex_);  // set once, under the lock, and kept until the end
    return placement_.get();
}

std::shared_ptr<ServedModel> Server::dispatch_model(const std::string &name) {
    std::shared_ptr<ServedModel> first = find_model(name);
    PlacementRouting *routing = nullptr;
    {
        std::lock_guard lock(models_mutex_);
        routing = placement_.get();
    }
    if (first == nullptr || first->placement_group < 0 || routing == nullptr) return first;
    // Requests arrive on the loop thread only, so the controller's clocks need no lock.
    const int32_t model = routing->model_index(first->name);
    const PlacementRouting::Decision d = routing->admit(uint32_t(model));
    if (!d.admitted) {
        char why[160];
        std::snprintf(why, sizeof why, "would take %.3f s on the least busy replica, past its SLO of %.3f s",
                      d.latency, d.slo);
        throw ApiError(429, "model '" + first->name + "': the request was rejected at arrival: the "
                            "placement's controller predicts it " + why,
                       "model", "slo_unattainable");
    }
    std::lock_guard lock(models_mutex_);
    for (const auto &m : models_)
        if (m->name == first->name && m->placement_group == d.group) return m;
    return first;  // not reached: add_placement serves every replica the placement lists
}

void Server::add_placement(plan::Placement placement, const std::vector<ReplicaSlot> &slots,
                           std::vector<std::shared_ptr<EnginePort>> replicas) {
    if (slots.size() != replicas.size())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "add_placement: one engine per replica slot");
    plan::validate(placement);
    auto routing = std::make_unique<PlacementRouting>(std::move(placement));
    size_t listed = 0;
    for (const plan::PlacementGroup &g : routing->placement().groups) listed += g.replicas.size();
    if (listed != slots.size())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the placement lists " + std::to_string(listed) +
                                                     " replicas, but " + std::to_string(slots.size()) +
                                                     " engines were given");
    std::vector<std::shared_ptr<ServedModel>> made;
    for (size_t i = 0; i < slots.size(); ++i) {
        const ReplicaSlot &slot = slots[i];
        const int32_t model = routing->model_index(slot.model);
        const std::string where = "placement group " + std::to_string(slot.group) + ", model '" + slot.model + "'";
        if (model < 0 || !routing->holds(size_t(slot.group), uint32_t(model)))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, where + ": the placement holds no such replica");
        for (size_t j = 0; j < i; ++j)
            if (slots[j].model == slot.model && slots[j].group == slot.group)
                throw Error(PAGODA_ERR_INVALID_ARGUMENT, where + ": given twice");
        if (replicas[i]->has_output_callback())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, where + ": the engine delivers its outputs to a callback");
        made.push_back(make_served_model(slot.model, std::move(replicas[i])));
        made.back()->placement_group = slot.group;
    }
    std::lock_guard lock(models_mutex_);
    if (finishing_ || stop_requested_)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the server is stopping or stopped");
    if (placement_ != nullptr || !models_.empty())
        throw Error(PAGODA_ERR_ALREADY_EXISTS, "a placement is served only by a server with no model yet");
    placement_ = std::move(routing);
    for (auto &m : made) {
        m->driver = std::make_unique<EngineDriver>(*m->engine, [this] { notify_progress(); },
                                                   [this] { engine_failed(); });
        models_.push_back(std::move(m));
    }
}

std::vector<std::shared_ptr<ServedModel>> Server::models() const {
    std::lock_guard lock(models_mutex_);
    return models_;
}

std::string Server::next_id(const char *prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%llx%08llx", prefix, (unsigned long long)++id_counter_,
                  (unsigned long long)(rng() & 0xffffffffu));
    return buf;
}

void Server::notify_progress() {
    if (async_ready_.load()) uv_async_send(&outputs_async_);
}

void Server::start(uv_loop_t *host_loop) {
    if (started_.exchange(true)) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the server was started already");
    if (host_loop != nullptr) {
        loop_ = host_loop;
        start_thread_ = std::this_thread::get_id();
    } else {
        if (int rc = uv_loop_init(&own_loop_); rc != 0)
            throw Error(PAGODA_ERR_INTERNAL, std::string("uv_loop_init: ") + uv_strerror(rc));
        loop_ = &own_loop_;
        own_thread_ = true;
    }
    union {
        sockaddr_in v4;
        sockaddr_in6 v6;
    } addr{};
    const sockaddr *sa;
    if (uv_ip4_addr(options_.host.c_str(), options_.port, &addr.v4) == 0)
        sa = reinterpret_cast<const sockaddr *>(&addr.v4);
    else if (uv_ip6_addr(options_.host.c_str(), options_.port, &addr.v6) == 0)
        sa = reinterpret_cast<const sockaddr *>(&addr.v6);
    else {
        if (own_thread_) uv_loop_close(&own_loop_);
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "host '" + options_.host + "' is not an IPv4 or IPv6 address");
    }
    uv_tcp_init(loop_, &listener_);
    listener_.data = this;
    open_handles_ = 1;
    running_ = true;
    int rc = uv_tcp_bind(&listener_, sa, 0);
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t *>(&listener_), 1024, on_connection);
    if (rc != 0) {
        // The listener closes on the loop's next run; a host's loop must run it before destroy.
        uv_close(reinterpret_cast<uv_handle_t *>(&listener_), on_handle_closed);
        if (own_thread_) {
            uv_run(&own_loop_, UV_RUN_DEFAULT);
            uv_loop_close(&own_loop_);
        }
        throw Error(PAGODA_ERR_IO, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                       ": " + uv_strerror(rc));
    }
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr *>(&bound), &len);
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    uv_async_init(loop_, &outputs_async_, on_outputs);
    uv_async_init(loop_, &control_async_, on_control);
    uv_timer_init(loop_, &drain_timer_);
    outputs_async_.data = control_async_.data = drain_timer_.data = this;
    open_handles_ += 3;
    async_ready_ = true;
    // The first run of the loop reports which thread runs it (on_control).
    uv_async_send(&control_async_);
    if (own_thread_) {
        thread_ = std::thread([this] {
            // A write to a socket whose client left raises SIGPIPE, which would end the host's
            // process; blocked on this thread, the write fails with EPIPE instead.
            sigset_t pipe;
            sigemptyset(&pipe);
            sigaddset(&pipe, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
            uv_run(loop_, UV_RUN_DEFAULT);
        });
        loop_thread_ = thread_.get_id();
    }
}

void Server::stop() {
    if (!started_.load()) return;
    // On the loop's thread (or on a host's loop not yet run, from the thread that started us),
    // waiting would deadlock: start the drain and let the loop finish it.
    const std::thread::id self = std::this_thread::get_id(), loop_thread = loop_thread_.load();
    if (self == loop_thread || (loop_thread == std::thread::id() && !own_thread_ && self == start_thread_)) {
        begin_drain();
        return;
    }
    request_stop();
    if (own_thread_) {
        if (thread_.joinable()) {
            thread_.join();
            uv_loop_close(&own_loop_);
        }
        return;
    }
    std::unique_lock lock(stopped_mutex_);
    stopped_cv_.wait(lock, [&] { return !running_.load(); });
}

void Server::request_stop() {
    std::lock_guard lock(stopped_mutex_);
    if (running_ && async_ready_) {
        stop_requested_ = true;
        uv_async_send(&control_async_);
    }
}

// On a driver's thread: as pagoda_server_stop() from another thread, without waiting (the drain
// stops this driver).
void Server::engine_failed() { request_stop(); }

void Server::on_connection(uv_stream_t *listener, int status) {
    Server *s = static_cast<Server *>(listener->data);
    if (status < 0 || s->draining_) return;
    (new Connection(*s))->accept(listener);
}

void Server::on_outputs(uv_async_t *a) { static_cast<Server *>(a->data)->poll_outputs(); }

void Server::on_control(uv_async_t *a) {
    Server *s = static_cast<Server *>(a->data);
    s->loop_thread_ = std::this_thread::get_id();
    if (s->stop_requested_) s->begin_drain();
    s->finish_if_drained();
}

void Server::poll_outputs() {
    for (const auto &m : models()) {
        pagoda_output_t out{};
        out.struct_size = sizeof out;
        while (m->engine->poll(&out) == PAGODA_OK) {
            if (auto e = m->embeddings.find(out.request_id); e != m->embeddings.end()) {
                std::shared_ptr<Embedding> embedding = e->second;  // kept while it answers
                if (out.request_finished) m->embeddings.erase(e);
                embedding->on_output(out);
                continue;
            }
            auto it = m->generations.find(out.request_id);
            if (it == m->generations.end()) continue;
            std::shared_ptr<Generation> generation = it->second;  // kept while it answers
            if (out.request_finished) m->generations.erase(it);
            generation->on_output(out);
        }
    }
    check_drained();
}

void Server::connection_closed(Connection *c) {
    connections_.erase(c);
    check_drained();
}

void Server::begin_drain() {
    if (draining_) return;
    draining_ = true;
    uv_close(reinterpret_cast<uv_handle_t *>(&listener_), on_handle_closed);
    uv_timer_start(&drain_timer_, on_drain_deadline, uint64_t(options_.drain_timeout_ms), 0);
    std::vector<Connection *> open(connections_.begin(), connections_.end());
    for (Connection *c : open) c->drain();
    check_drained();
}

void Server::on_drain_deadline(uv_timer_t *t) {
    Server *s = static_cast<Server *>(t->data);
    if (s->drain_phase_ == 0) {
        for (const auto &m : s->models())
            for (auto &[id, g] : m->generations) g->abort_for_shutdown();
        for (const auto &m : s->models())
            for (auto &[id, e] : m->embeddings) e->abort_for_shutdown();
        uv_timer_start(t, on_drain_deadline, kAbortGraceMs, 0);
    } else if (s->drain_phase_ == 1) {
        std::vector<Connection *> open(s->connections_.begin(), s->connections_.end());
        for (Connection *c : open) c->close();
        uv_timer_start(t, on_drain_deadline, kCloseGraceMs, 0);
    } else {
        log(PAGODA_LOG_WARN, "server: requests still unfinished after the drain; stopping anyway");
        s->finish_stop();
        return;
    }
    ++s->drain_phase_;
    s->check_drained();
}

void Server::check_drained() {
    // Deferred to the control callback: callers sit inside loops over connections and
    // generations that finishing would clear under them.
    if (draining_ && !finishing_) uv_async_send(&control_async_);
}

void Server::finish_if_drained() {
    if (!draining_ || finishing_ || !connections_.empty()) return;
    for (const auto &m : models())
        if (!m->generations.empty() || !m->embeddings.empty()) return;
    finish_stop();
}

void Server::finish_stop() {
    if (finishing_) return;
    {
        std::lock_guard lock(models_mutex_);
        finishing_ = true;
    }
    uv_timer_stop(&drain_timer_);
    for (const auto &m : models()) {
        m->driver->stop();
        // Drivers are gone: what is left is aborted and drained here, on the loop thread.
        for (auto &[id, g] : m->generations) m->engine->abort(id);
        for (auto &[id, e] : m->embeddings) m->engine->abort(id);
        pagoda_output_t out{};
        out.struct_size = sizeof out;
        while (m->engine->poll(&out) == PAGODA_OK) {
        }
        m->generations.clear();
        m->embeddings.clear();
    }
    {
        std::lock_guard lock(stopped_mutex_);
        async_ready_ = false;
    }
    uv_close(reinterpret_cast<uv_handle_t *>(&outputs_async_), on_handle_closed);
    uv_close(reinterpret_cast<uv_handle_t *>(&control_async_), on_handle_closed);
    uv_close(reinterpret_cast<uv_handle_t *>(&drain_timer_), on_handle_closed);
}

void Server::on_handle_closed(uv_handle_t *h) {
    Server *s = static_cast<Server *>(h->data);
    if (--s->open_handles_ > 0) return;
    {
        std::lock_guard lock(s->stopped_mutex_);
        s->running_ = false;
        s->port_ = -1;
    }
    s->stopped_cv_.notify_all();
}

}  // namespace pagoda::server
