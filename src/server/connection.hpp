// One client connection: libuv TCP reads fed to a RequestReader, one request at a time
// (pipelined requests wait in `pending_`), keep-alive, idle and request timeouts, and the writes
// of a whole response or of a chunked stream. Lives on the loop thread; deletes
// itself once its handles are closed.
#pragma once

#include <uv.h>

#include <string>
#include <string_view>
#include <vector>

#include "server/http_message.hpp"
#include "server/request_reader.hpp"

namespace pagoda::server {

class Server;
class Generation;
class Embedding;

class Connection {
public:
    explicit Connection(Server &server);
    Connection(const Connection &) = delete;
    Connection &operator=(const Connection &) = delete;

    // Accepts the pending connection of `listener` and starts reading; false (and the
    // connection closes itself) on failure.
    bool accept(uv_stream_t *listener);

    const HttpRequest &request() noexcept { return reader_.request(); }
    // Headers added to every response to the current request (CORS).
    std::vector<Header> &extra_headers() noexcept { return extra_headers_; }

    // Answers the current request in one piece.
    void respond(const HttpResponse &response);
    // Answers it as a chunked stream: head first, then chunks, then the end.
    void begin_stream(int status, const std::string &content_type);
    void send_chunk(std::string_view data);
    void end_stream();

    // The generation answering the current request; told when the client goes away.
    void set_generation(Generation *g) noexcept { generation_ = g; }
    // The embeddings request answering the current request; told when the client goes away.
    void set_embedding(Embedding *e) noexcept { embedding_ = e; }
    // The server is stopping: close now when idle, else after the response in progress.
    void drain();
    // Closes at once (a response in progress is cut off, its generation aborted).
    void close();
    bool closing() const noexcept { return closing_; }

private:
    enum class State { Idle, Reading, Handling };

    void on_data(const char *data, size_t size);
    void on_request_begin();
    void process_input();
    void fail_request(int status, const std::string &message);
    void finish_request(bool keep_alive);
    void write(std::string data);
    void shutdown_and_close();
    void arm_timer(int64_t ms, uv_timer_cb cb);

    static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
    static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
    static void on_write(uv_write_t *req, int status);
    static void on_shutdown(uv_shutdown_t *req, int status);
    static void on_closed(uv_handle_t *h);
    static void on_idle_timeout(uv_timer_t *t);
    static void on_request_timeout(uv_timer_t *t);

    Server &server_;
    uv_tcp_t tcp_{};
    uv_timer_t timer_{};
    uv_shutdown_t shutdown_req_{};
    int open_handles_ = 0;
    State state_ = State::Idle;
    bool reading_ = false;
    bool processing_ = false;
    bool closing_ = false;
    bool closed_ = false;
    bool draining_ = false;
    bool keep_alive_ = true;
    std::string pending_;         // received, not yet parsed
    RequestReader reader_;
    std::vector<Header> extra_headers_;
    Generation *generation_ = nullptr;
    Embedding *embedding_ = nullptr;
    char read_buffer_[64 * 1024];
};

}  // namespace pagoda::server
