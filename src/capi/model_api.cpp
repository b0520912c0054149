// model.h: opening models (blocking, or on a background thread that can be polled and
// cancelled), describing them and releasing them.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/progress.hpp"
#include "capi/sized_struct.hpp"
#include "capi/tokenizer_handle.hpp"
#include "engine/model_tokenizer.hpp"
#include "pagoda/model.h"

using pagoda::fail;
using pagoda::guarded;

namespace {

pagoda_model_options_t default_model_options() {
    pagoda_model_options_t o{};
    o.struct_size = sizeof(o);
    return o;
}

}  // namespace

// The background open of pagoda_model_load_start.
struct pagoda_model_loader {
    static constexpr uint32_t kMagic = 0x44414f4cu;  // "LOAD"
    uint32_t magic = kMagic;
    std::atomic<float> fraction{0.0f};
    std::atomic<bool> done{false};
    std::atomic<bool> cancel{false};
    std::thread thread;
    // Set by the thread before `done`.
    pagoda_status_t status = PAGODA_OK;
    std::string message;
    std::shared_ptr<const pagoda::model::Model> model;
    std::shared_ptr<const pagoda::tok::Tokenizer> tokenizer;
    ~pagoda_model_loader() { magic = 0; }
};

extern "C" {

PAGODA_API void pagoda_model_options_init(pagoda_model_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_model_options());
}

PAGODA_API pagoda_status_t pagoda_model_open(const char *path, const pagoda_model_options_t *options,
                                             pagoda_model_t **out) {
    return guarded("pagoda_model_open", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        if (path == nullptr || *path == '\0') fail(PAGODA_ERR_INVALID_ARGUMENT, "path is NULL or empty");
        pagoda_model_options_t o = pagoda::read_sized(options, default_model_options(), "options");
        auto model = std::make_unique<pagoda_model>();
        model->impl = pagoda::model::open_model(path, pagoda::progress_of(o.progress, o.progress_user), nullptr);
        model->tokenizer = pagoda::engine::open_model_tokenizer(*model->impl);
        *out = model.release();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_model_load_start(const char *path,
                                                   const pagoda_model_options_t *options,
                                                   pagoda_model_loader_t **out) {
    return guarded("pagoda_model_load_start", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        if (path == nullptr || *path == '\0') fail(PAGODA_ERR_INVALID_ARGUMENT, "path is NULL or empty");
        pagoda_model_options_t o = pagoda::read_sized(options, default_model_options(), "options");
        auto loader = std::make_unique<pagoda_model_loader>();
        pagoda_model_loader *l = loader.get();
        pagoda::model::ProgressFn user = pagoda::progress_of(o.progress, o.progress_user);
        l->thread = std::thread([l, p = std::string(path), user] {
            pagoda::model::ProgressFn track = [l, &user](double fraction, const char *stage) {
                l->fraction.store(static_cast<float>(fraction));
                return user ? user(fraction, stage) : true;
            };
            l->status = guarded("pagoda_model_load", [&] {
                l->model = pagoda::model::open_model(p, track, &l->cancel);
                l->tokenizer = pagoda::engine::open_model_tokenizer(*l->model);
                return PAGODA_OK;
            });
            if (l->status != PAGODA_OK) l->message = pagoda_last_error_message();
            else l->fraction.store(1.0f);
            l->done.store(true);
        });
        *out = loader.release();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_model_loader_progress(const pagoda_model_loader_t *loader,
                                                        float *fraction, int *done) {
    return guarded("pagoda_model_loader_progress", [&] {
        if (loader == nullptr || loader->magic != pagoda_model_loader::kMagic)
            fail(PAGODA_ERR_INVALID_HANDLE, "loader is not a live loader");
        if (fraction == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "fraction is NULL");
        // `done` first: the thread sets the final fraction before `done`, so a caller that sees
        // done also sees the fraction it ended with.
        const bool finished = loader->done.load();
        *fraction = loader->fraction.load();
        if (done != nullptr) *done = finished ? 1 : 0;
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_model_loader_cancel(pagoda_model_loader_t *loader) {
    if (loader != nullptr && loader->magic == pagoda_model_loader::kMagic) loader->cancel.store(true);
}

PAGODA_API pagoda_status_t pagoda_model_loader_finish(pagoda_model_loader_t *loader,
                                                      pagoda_model_t **out) {
    return guarded("pagoda_model_loader_finish", [&] {
        if (out != nullptr) *out = nullptr;
        if (loader == nullptr || loader->magic != pagoda_model_loader::kMagic)
            fail(PAGODA_ERR_INVALID_HANDLE, "loader is not a live loader");
        std::unique_ptr<pagoda_model_loader> owned(loader);
        owned->thread.join();
        if (owned->status != PAGODA_OK) throw pagoda::Error(owned->status, owned->message);
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL (the model was released)");
        auto model = std::make_unique<pagoda_model>();
        model->impl = std::move(owned->model);
        model->tokenizer = std::move(owned->tokenizer);
        *out = model.release();
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_model_destroy(pagoda_model_t *model) {
    if (model != nullptr && model->magic == pagoda_model::kMagic) delete model;
}

PAGODA_API pagoda_status_t pagoda_model_get_info(const pagoda_model_t *model, pagoda_model_info_t *info) {
    return guarded("pagoda_model_get_info", [&] {
        const auto &m = *pagoda::require_handle(model, "model")->impl;
        const pagoda::model::ModelConfig &c = m.config();
        pagoda_model_info_t full{};
        full.struct_size = sizeof(full);
        std::strncpy(full.architecture, pagoda::model::architecture_name(c.architecture),
                     sizeof(full.architecture) - 1);
        full.vocab_size = c.vocab_size;
        full.hidden_size = c.hidden_size;
        full.intermediate_size = c.intermediate_size;
        full.n_layers = c.n_layers;
        full.n_heads = c.n_heads;
        full.n_kv_heads = c.n_kv_heads;
        full.head_dim = c.head_dim;
        full.max_position = c.max_position;
        full.n_parameters = m.parameter_count();
        full.bos_token_id = c.bos_token_id;
        full.eos_token_id = c.eos_token_ids.empty() ? -1 : c.eos_token_ids.front();
        if (c.n_experts > 0) {
            full.n_experts = c.n_experts;
            full.experts_per_token = c.experts_per_token;
            full.expert_intermediate_size = c.expert_intermediate_size;
            for (int64_t l = 0; l < c.n_layers; ++l) full.n_sparse_layers += c.is_sparse(l) ? 1 : 0;
        }
        pagoda::write_sized(info, full, "info");
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_tokenizer_from_model(const pagoda_model_t *model,
                                                       pagoda_tokenizer_t **out) {
    return guarded("pagoda_tokenizer_from_model", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        const pagoda_model &m = *pagoda::require_handle(model, "model");
        if (!m.tokenizer) fail(PAGODA_ERR_NOT_FOUND, m.impl->source() + " carries no tokenizer");
        *out = pagoda::make_tokenizer_handle(m.tokenizer);
        return PAGODA_OK;
    });
}

// Answers what pagoda_model_path_v2 answers (NULL on failure).
PAGODA_API const char *pagoda_model_path(const pagoda_model_t *model) {
    const char *path = nullptr;
    pagoda_model_path_v2(model, &path);
    return path;
}

PAGODA_API pagoda_status_t pagoda_model_path_v2(const pagoda_model_t *model, const char **path) {
    return guarded("pagoda_model_path_v2", [&] {
        if (path == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "path is NULL");
        *path = nullptr;
        *path = pagoda::require_handle(model, "model")->impl->source().c_str();
        return PAGODA_OK;
    });
}

}  // extern "C"
