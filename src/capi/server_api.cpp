// server.h: the OpenAI-compatible HTTP server over engines.
#include <uv.h>

#include <algorithm>
#include <memory>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/server_handle.hpp"
#include "capi/sized_struct.hpp"
#include "common/log.hpp"
#include "pagoda/server.h"
#include "server/server.hpp"

using pagoda::fail;
using pagoda::guarded;

extern "C" {

PAGODA_API void pagoda_server_options_init(pagoda_server_options_t *options, size_t size) {
    pagoda::init_sized(options, size, pagoda::server::default_public_server_options());
}

PAGODA_API pagoda_status_t pagoda_server_create(const pagoda_server_options_t *options,
                                                pagoda_server_t **out) {
    return guarded("pagoda_server_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        pagoda_server_options_t o =
            pagoda::read_sized(options, pagoda::server::default_public_server_options(), "options");
        auto s = std::make_unique<pagoda_server>();
        s->impl = std::make_unique<pagoda::server::Server>(pagoda::server::ServerOptions::from_public(o));
        *out = s.release();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_add_model(pagoda_server_t *server, const char *name,
                                                   pagoda_engine_t *engine) {
    return guarded("pagoda_server_add_model", [&] {
        pagoda_server *s = pagoda::require_handle(server, "server");
        if (name == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "name is NULL");
        s->impl->add_model(name, std::make_shared<pagoda::HandleEnginePort>(pagoda::require_handle(engine, "engine")));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_start(pagoda_server_t *server) {
    return guarded("pagoda_server_start", [&] {
        pagoda::require_handle(server, "server")->impl->start(nullptr);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_server_start_on_loop(pagoda_server_t *server, void *uv_loop) {
    return guarded("pagoda_server_start_on_loop", [&] {
        pagoda_server *s = pagoda::require_handle(server, "server");
        if (uv_loop == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "uv_loop is NULL");
        s->impl->start(static_cast<uv_loop_t *>(uv_loop));
        return PAGODA_OK;
    });
}

PAGODA_API int32_t pagoda_server_port(const pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return -1;
    return server->impl->port();
}

PAGODA_API pagoda_status_t pagoda_server_stop(pagoda_server_t *server) {
    return guarded("pagoda_server_stop", [&] {
        pagoda::require_handle(server, "server")->impl->stop();
        return PAGODA_OK;
    });
}

PAGODA_API int pagoda_server_is_running(const pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return 0;
    return server->impl->running() ? 1 : 0;
}

PAGODA_API void pagoda_server_destroy(pagoda_server_t *server) {
    if (server == nullptr || server->magic != pagoda_server::kMagic) return;
    try {
        server->impl->stop();
        if (!server->impl->may_free()) {
            pagoda::log(PAGODA_LOG_ERROR, "pagoda_server_destroy: the server still runs on the host's loop; "
                                          "it is left allocated (run the loop until pagoda_server_is_running() "
                                          "gives 0 first)");
            return;
        }
        delete server;
    } catch (...) {
        pagoda::log(PAGODA_LOG_ERROR, "pagoda_server_destroy: failed while stopping");
    }
}

}  // extern "C"
