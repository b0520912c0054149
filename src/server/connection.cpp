#include "server/connection.hpp"

#include <memory>

#include "common/log.hpp"
#include "server/api_error.hpp"
#include "server/embedding.hpp"
#include "server/generation.hpp"
#include "server/router.hpp"
#include "server/server.hpp"

namespace pagoda::server {

namespace {

struct WriteRequest {
    uv_write_t req;
    std::string data;
};

}  // namespace

Connection::Connection(Server &server)
    : server_(server),
      reader_({server.options().max_header_bytes, server.options().max_body_bytes},
              {[this] { on_request_begin(); }, [this] { write("HTTP/1.1 100 Continue\r\n\r\n"); }}) {}

void Connection::on_request_begin() {
    state_ = State::Reading;
    arm_timer(server_.options().request_timeout_ms, on_request_timeout);
}

bool Connection::accept(uv_stream_t *listener) {
    uv_loop_t *loop = listener->loop;
    uv_tcp_init(loop, &tcp_);
    tcp_.data = this;
    ++open_handles_;
    uv_timer_init(loop, &timer_);
    timer_.data = this;
    ++open_handles_;
    server_.connection_opened(this);
    if (uv_accept(listener, reinterpret_cast<uv_stream_t *>(&tcp_)) != 0 ||
        uv_read_start(reinterpret_cast<uv_stream_t *>(&tcp_), on_alloc, on_read) != 0) {
        close();
        return false;
    }
    uv_tcp_nodelay(&tcp_, 1);
    reading_ = true;
    arm_timer(server_.options().idle_timeout_ms, on_idle_timeout);
    return true;
}

void Connection::arm_timer(int64_t ms, uv_timer_cb cb) {
    uv_timer_stop(&timer_);
    if (ms > 0) uv_timer_start(&timer_, cb, uint64_t(ms), 0);
}

void Connection::on_alloc(uv_handle_t *h, size_t, uv_buf_t *buf) {
    Connection *c = static_cast<Connection *>(h->data);
    *buf = uv_buf_init(c->read_buffer_, sizeof c->read_buffer_);
}

void Connection::on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    Connection *c = static_cast<Connection *>(s->data);
    if (nread > 0) c->on_data(buf->base, size_t(nread));
    else if (nread < 0) c->close();  // EOF or error: a client gone mid-request aborts its work
}

void Connection::on_data(const char *data, size_t size) {
    if (closing_) return;
    pending_.append(data, size);
    // While a request is answered, later bytes wait; past a bound, stop reading (TCP pushes back).
    if (state_ == State::Handling) {
        const auto &o = server_.options();
        if (int64_t(pending_.size()) > o.max_header_bytes + o.max_body_bytes + 65536 && reading_) {
            uv_read_stop(reinterpret_cast<uv_stream_t *>(&tcp_));
            reading_ = false;
        }
        return;
    }
    process_input();
}

void Connection::process_input() {
    if (processing_) return;  // the outer call's loop goes on with what is pending
    processing_ = true;
    while (!closing_ && state_ != State::Handling && !pending_.empty()) {
        std::string data;
        data.swap(pending_);
        size_t used = 0;
        RequestReader::Outcome outcome = reader_.feed(data, used);
        if (outcome == RequestReader::Outcome::Refused) {
            fail_request(reader_.refused_status(), reader_.refused_message());
            break;
        }
        if (outcome == RequestReader::Outcome::Request) {
            // One request at a time: the bytes after it wait until it is answered.
            pending_.assign(data, used, std::string::npos);
            keep_alive_ = reader_.keep_alive();
            state_ = State::Handling;
            uv_timer_stop(&timer_);
            route_request(server_, *this);
        }
    }
    processing_ = false;
}

void Connection::fail_request(int status, const std::string &message) {
    // The parser cannot resynchronise after a refused request: answer and close.
    keep_alive_ = false;
    state_ = State::Handling;
    respond(HttpResponse::json(status, error_body(status, message)));
}

void Connection::write(std::string data) {
    if (closed_) return;
    auto *w = new WriteRequest;
    w->data = std::move(data);
    w->req.data = this;
    uv_buf_t buf = uv_buf_init(w->data.data(), unsigned(w->data.size()));
    if (uv_write(&w->req, reinterpret_cast<uv_stream_t *>(&tcp_), &buf, 1, on_write) != 0) {
        delete w;
        close();
        return;
    }
    // A client that stopped reading: its bytes pile up here once the socket buffers are full.
    if (int64_t(tcp_.write_queue_size) > server_.options().max_unsent_bytes) {
        log(PAGODA_LOG_WARN, "server: closing a connection whose client does not read its response (" +
                                 std::to_string(tcp_.write_queue_size) + " bytes unsent)");
        close();
    }
}

void Connection::on_write(uv_write_t *req, int status) {
    auto *w = reinterpret_cast<WriteRequest *>(req);
    Connection *c = static_cast<Connection *>(req->data);
    delete w;
    if (status < 0) c->close();  // the client went away; cancelled writes land here too
}

void Connection::respond(const HttpResponse &response) {
    if (closing_) return;
    bool keep = keep_alive_ && !draining_ && !server_.draining();
    std::vector<Header> headers = response.headers;
    headers.insert(headers.end(), extra_headers_.begin(), extra_headers_.end());
    write(serialize_head(response.status, response.content_type, headers,
                         (long long)response.body.size(), keep) +
          response.body);
    finish_request(keep);
}

void Connection::begin_stream(int status, const std::string &content_type) {
    if (closing_) return;
    std::vector<Header> headers = {{"Cache-Control", "no-cache"}};
    headers.insert(headers.end(), extra_headers_.begin(), extra_headers_.end());
    write(serialize_head(status, content_type, headers, -1, keep_alive_));
}

void Connection::send_chunk(std::string_view data) {
    if (closing_ || data.empty()) return;
    write(chunk(data));
}

void Connection::end_stream() {
    if (closing_) return;
    write(chunk({}));
    // The head promised keep-alive; a draining server closes after the last chunk anyway.
    finish_request(keep_alive_ && !draining_ && !server_.draining());
}

void Connection::finish_request(bool keep_alive) {
    generation_ = nullptr;
    embedding_ = nullptr;
    extra_headers_.clear();
    state_ = State::Idle;
    if (!keep_alive) {
        shutdown_and_close();
        return;
    }
    reader_.resume();
    arm_timer(server_.options().idle_timeout_ms, on_idle_timeout);
    if (!reading_ &&
        uv_read_start(reinterpret_cast<uv_stream_t *>(&tcp_), on_alloc, on_read) == 0)
        reading_ = true;
    process_input();
}

void Connection::drain() {
    draining_ = true;
    if (state_ == State::Idle && pending_.empty()) close();
}

void Connection::shutdown_and_close() {
    if (closing_) return;
    closing_ = true;
    uv_timer_stop(&timer_);
    uv_read_stop(reinterpret_cast<uv_stream_t *>(&tcp_));
    shutdown_req_.data = this;
    // The shutdown waits for queued writes, so the response is sent before the close.
    if (uv_shutdown(&shutdown_req_, reinterpret_cast<uv_stream_t *>(&tcp_), on_shutdown) != 0) close();
}

void Connection::on_shutdown(uv_shutdown_t *req, int) { static_cast<Connection *>(req->data)->close(); }

void Connection::close() {
    if (closed_) return;
    closed_ = true;
    closing_ = true;
    if (generation_ != nullptr) {
        Generation *g = generation_;
        generation_ = nullptr;
        g->client_gone();
    }
    if (embedding_ != nullptr) {
        Embedding *e = embedding_;
        embedding_ = nullptr;
        e->client_gone();
    }
    uv_timer_stop(&timer_);
    server_.connection_closed(this);
    uv_close(reinterpret_cast<uv_handle_t *>(&tcp_), on_closed);
    uv_close(reinterpret_cast<uv_handle_t *>(&timer_), on_closed);
}

void Connection::on_closed(uv_handle_t *h) {
    Connection *c = static_cast<Connection *>(h->data);
    if (--c->open_handles_ == 0) delete c;
}

void Connection::on_idle_timeout(uv_timer_t *t) { static_cast<Connection *>(t->data)->close(); }

void Connection::on_request_timeout(uv_timer_t *t) {
    Connection *c = static_cast<Connection *>(t->data);
    c->fail_request(408, "the request was not received in time (" +
                             std::to_string(c->server_.options().request_timeout_ms) + " ms)");
}

}  // namespace pagoda::server
