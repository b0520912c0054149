// engine.h: making engines, submitting and aborting requests, stepping, polling outputs.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/plan_handle.hpp"
#include "capi/sized_struct.hpp"
#include "sample/request_defaults.hpp"
#include "pagoda/engine.h"

using pagoda::fail;
using pagoda::guarded;
using pagoda::sample::default_request_options;
using pagoda::engine::Output;
using pagoda::engine::RequestConfig;

namespace {

pagoda_engine_options_t default_engine_options() {
    pagoda_engine_options_t o{};
    o.struct_size = sizeof(o);
    o.max_num_seqs = 256;
    o.max_num_batched_tokens = 2048;
    return o;
}

// A (pointer, count) pair of the options, checked: NULL only with a count of 0.
template <typename T>
std::span<const T> option_array(const T *items, size_t count, const char *name,
                                const char *count_name) {
    if (count > 0 && items == nullptr)
        fail(PAGODA_ERR_INVALID_ARGUMENT,
             std::string(name) + " is NULL but " + count_name + " is " + std::to_string(count));
    return {items, count};
}

// logit_bias, bad_words, allowed_token_ids, min_tokens and the processor; the engine checks
// the ids against the vocabulary.
void copy_controls(const pagoda_request_options_t &o, RequestConfig &c) {
    for (const pagoda_logit_bias_t &b :
         option_array(o.logit_bias, o.n_logit_bias, "logit_bias", "n_logit_bias"))
        c.controls.logit_bias.emplace_back(b.token_id, b.bias);
    const std::span<const size_t> lengths =
        option_array(o.bad_words_lengths, o.n_bad_words, "bad_words_lengths", "n_bad_words");
    size_t total = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
        if (lengths[i] == 0)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "bad_words_lengths[" + std::to_string(i) + "] is 0");
        if (lengths[i] > (size_t(1) << 20) || total + lengths[i] < total)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "bad_words_lengths[" + std::to_string(i) +
                                                  "] is " + std::to_string(lengths[i]) +
                                                  ", too long for a word");
        total += lengths[i];
    }
    const std::span<const int32_t> ids = option_array(
        o.bad_words_token_ids, total, "bad_words_token_ids", "the sum of bad_words_lengths");
    for (size_t i = 0, at = 0; i < lengths.size(); at += lengths[i++])
        c.controls.bad_words.emplace_back(ids.begin() + std::ptrdiff_t(at),
                                          ids.begin() + std::ptrdiff_t(at + lengths[i]));
    const std::span<const int32_t> allowed = option_array(
        o.allowed_token_ids, o.n_allowed_token_ids, "allowed_token_ids", "n_allowed_token_ids");
    c.controls.allowed_token_ids.assign(allowed.begin(), allowed.end());
    c.controls.min_tokens = o.min_tokens;
    c.processor = o.logits_processor;
    c.processor_user = o.logits_processor_user;
}

// The C options with everything they point to copied.
RequestConfig request_config(const pagoda_request_options_t *options) {
    pagoda_request_options_t o = pagoda::read_sized(options, default_request_options(), "options");
    RequestConfig c;
    c.flags = o.flags;
    c.max_tokens = o.max_tokens;
    c.sampling.temperature = o.temperature;
    c.sampling.top_k = o.top_k;
    c.sampling.top_p = o.top_p;
    c.sampling.min_p = o.min_p;
    c.sampling.repetition_penalty = o.repetition_penalty;
    c.sampling.presence_penalty = o.presence_penalty;
    c.sampling.frequency_penalty = o.frequency_penalty;
    c.sampling.logprobs = o.logprobs;
    c.seed = o.seed;
    c.prompt_logprobs = o.prompt_logprobs;
    c.priority = o.priority;
    c.n = o.n;
    c.best_of = o.best_of;
    c.beam_width = o.beam_width;
    c.length_penalty = o.length_penalty;
    c.early_stopping = o.early_stopping;
    if (o.n_stop_token_ids > 0 && o.stop_token_ids == nullptr)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "stop_token_ids is NULL but n_stop_token_ids is not 0");
    c.stop_token_ids.assign(o.stop_token_ids, o.stop_token_ids + o.n_stop_token_ids);
    if (o.n_stop_strings > 0 && o.stop_strings == nullptr)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "stop_strings is NULL but n_stop_strings is not 0");
    for (size_t i = 0; i < o.n_stop_strings; ++i) {
        if (o.stop_strings[i] == nullptr)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "stop_strings[" + std::to_string(i) + "] is NULL");
        c.stop_strings.emplace_back(o.stop_strings[i]);
    }
    copy_controls(o, c);
    c.constraint_kind = static_cast<pagoda::grammar::ConstraintKind>(o.constraint_kind);
    if (o.constraint_kind != PAGODA_CONSTRAINT_NONE && o.constraint_kind != PAGODA_CONSTRAINT_JSON_OBJECT) {
        if (o.constraint == nullptr)
            fail(PAGODA_ERR_INVALID_ARGUMENT,
                 "constraint is NULL but constraint_kind is " + std::to_string(o.constraint_kind));
        c.constraint_text = o.constraint;
    }
    c.pooling = o.pooling;
    c.embedding_normalize = o.embedding_normalize;
    return c;
}

bool same_devices(const pagoda::mesh::Mesh &a, const pagoda::mesh::Mesh &b) {
    if (a.devices().size() != b.devices().size()) return false;
    for (size_t i = 0; i < a.devices().size(); ++i)
        if (a.devices()[i]->name() != b.devices()[i]->name()) return false;
    return true;
}

std::string device_list(const pagoda::mesh::Mesh &m) {
    std::string out;
    for (const auto &d : m.devices()) out += (out.empty() ? "" : ",") + d->name();
    return out;
}

// The public view of an output; its pointers borrow `out`.
pagoda_output_t public_output(const Output &out) {
    pagoda_output_t p{};
    p.struct_size = sizeof(p);
    p.request_id = out.request_id;
    p.finish_reason = out.finish_reason;
    p.status = out.status;
    p.error = out.error.c_str();
    p.token_ids = out.token_ids.data();
    p.n_tokens = out.token_ids.size();
    p.text = out.text.c_str();
    p.text_len = out.text.size();
    if (out.has_logprobs) {
        p.logprobs = out.logprobs.data();
        p.top_logprobs = out.n_top_logprobs > 0 ? out.top_logprobs.data() : nullptr;
        p.n_top_logprobs = out.n_top_logprobs;
    }
    p.n_prompt_tokens = out.n_prompt_tokens;
    p.n_generated = out.n_generated;
    if (out.has_prompt_logprobs) {
        p.prompt_logprobs = out.prompt_logprobs.data();
        p.prompt_top_logprobs = out.n_prompt_top_logprobs > 0 ? out.prompt_top_logprobs.data() : nullptr;
        p.n_prompt_top_logprobs = out.n_prompt_top_logprobs;
    }
    p.sequence_index = out.sequence_index;
    p.cumulative_logprob = out.cumulative_logprob;
    p.request_finished = out.request_finished ? 1 : 0;
    if (!out.embedding.empty()) {
        p.embedding = out.embedding.data();
        p.n_embedding = out.embedding.size();
    }
    return p;
}

// The caller's output array: `capacity` entries whose first one's struct_size is the stride.
// Returns the stride, or throws INVALID_ARGUMENT naming what is wrong.
uint32_t output_stride(const pagoda_output_t *outputs, size_t capacity, const char *what) {
    if (outputs == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
    if (capacity == 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "capacity is 0");
    const uint32_t stride = outputs->struct_size;
    if (stride < 2 * sizeof(uint32_t))
        fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) +
                                              "->struct_size is not set: set it to sizeof(pagoda_output_t)");
    if (capacity > 1 && stride % alignof(pagoda_output_t) != 0)
        fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + "->struct_size is " + std::to_string(stride) +
                                              ", not a sizeof(pagoda_output_t): the entries would be misaligned");
    return stride;
}

// Moves up to `capacity` queued outputs into the calling thread's storage (releasing what it
// held: the thread's previous pointers end here) and writes them to `outputs` at `stride`.
// Returns how many.
size_t poll_into(pagoda_engine *e, pagoda_output_t *outputs, size_t capacity, uint32_t stride) {
    std::lock_guard lock(e->poll_mutex);
    // The entry stays when the poll is empty: a streaming host polls empty every step, and
    // erasing it would cost an allocation a token. A thread that leaves keeps an empty vector.
    std::vector<Output> &mine = e->polled[std::this_thread::get_id()];
    mine.clear();
    e->impl->poll_many(mine, capacity);
    // Each entry gets as much of ours as its stride holds, and keeps the stride as its
    // struct_size, the first included, so the array can be passed again as it is (a newer
    // host's fields past ours are left as the host set them).
    auto *entry = reinterpret_cast<unsigned char *>(outputs);
    for (size_t i = 0; i < mine.size(); ++i, entry += stride) {
        pagoda_output_t full = public_output(mine[i]);
        full.struct_size = stride;
        std::memcpy(entry, &full, std::min<size_t>(stride, sizeof full));
    }
    return mine.size();
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_engine_options_init(pagoda_engine_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_engine_options());
}

PAGODA_API void pagoda_request_options_init(pagoda_request_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_request_options());
}

PAGODA_API pagoda_status_t pagoda_engine_create(const pagoda_model_t *model,
                                                const pagoda_mesh_t *mesh,
                                                const pagoda_plan_t *plan,
                                                pagoda_kv_cache_t *cache,
                                                const pagoda_engine_options_t *options,
                                                pagoda_engine_t **out) {
    return guarded("pagoda_engine_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = nullptr;
        const pagoda_model *m = pagoda::require_handle(model, "model");
        const pagoda_mesh *me = pagoda::require_handle(mesh, "mesh");
        pagoda_kv_cache *kv = pagoda::require_handle(cache, "cache");
        if (kv->model != m->impl)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "the KV cache was made for another model");
        if (!same_devices(*kv->mesh, *me->impl))
            fail(PAGODA_ERR_INVALID_ARGUMENT, "the KV cache lives on " + device_list(*kv->mesh) +
                                                  ", not on this mesh's " + device_list(*me->impl));
        pagoda::MeshPlacement placement = kv->placement;
        if (plan != nullptr) {
            placement = pagoda::place_on_mesh(*m->impl, *me->impl,
                                              &pagoda::require_handle(const_cast<pagoda_plan_t *>(plan), "plan")->impl);
            if (!(*placement.layout == *kv->placement.layout))
                fail(PAGODA_ERR_INVALID_ARGUMENT, "the plan lays the model out as " + placement.layout->describe() +
                                                      " but the KV cache was made for " +
                                                      kv->placement.layout->describe() +
                                                      ": make both with the same plan");
        }
        const bool several = placement.layout->device_count() > 1;
        pagoda_engine_options_t o = pagoda::read_sized(options, default_engine_options(), "options");
        pagoda::engine::EngineConfig config;
        config.max_num_seqs = o.max_num_seqs;
        config.max_num_batched_tokens = o.max_num_batched_tokens;
        // Checked before the casts: an enum holding an undefined value is undefined behaviour.
        if (o.preemption < PAGODA_PREEMPT_AUTO || o.preemption > PAGODA_PREEMPT_SWAP)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->preemption must be a pagoda_preemption_t (got " +
                                                  std::to_string(o.preemption) + ")");
        if (o.kv_reservation != PAGODA_KV_PAGED && o.kv_reservation != PAGODA_KV_CONTIGUOUS)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->kv_reservation must be a pagoda_kv_reservation_t (got " +
                                                  std::to_string(o.kv_reservation) + ")");
        config.preemption = static_cast<pagoda_preemption_t>(o.preemption);
        config.reservation = static_cast<pagoda_kv_reservation_t>(o.kv_reservation);
        if (o.decode_graphs < PAGODA_DECODE_GRAPHS_AUTO || o.decode_graphs > PAGODA_DECODE_GRAPHS_OFF)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->decode_graphs must be a pagoda_decode_graphs_t (got " +
                                                  std::to_string(o.decode_graphs) + ")");
        config.decode_graphs = static_cast<pagoda_decode_graphs_t>(o.decode_graphs);
        if (o.device_sampling < PAGODA_DEVICE_SAMPLING_AUTO || o.device_sampling > PAGODA_DEVICE_SAMPLING_OFF)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->device_sampling must be a pagoda_device_sampling_t (got " +
                                                  std::to_string(o.device_sampling) + ")");
        config.device_sampling = static_cast<pagoda_device_sampling_t>(o.device_sampling);
        if (o.activation_dtype != 0 && o.activation_dtype != PAGODA_DTYPE_F32 &&
            o.activation_dtype != PAGODA_DTYPE_BF16 && o.activation_dtype != PAGODA_DTYPE_F16)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->activation_dtype must be 0, PAGODA_DTYPE_F32, "
                                              "PAGODA_DTYPE_BF16 or PAGODA_DTYPE_F16 (got " +
                                                  std::to_string(o.activation_dtype) + ")");
        config.activation_dtype = static_cast<pagoda_dtype_t>(o.activation_dtype);
        if (several && o.decode_graphs == PAGODA_DECODE_GRAPHS_ON)
            fail(PAGODA_ERR_UNSUPPORTED, "decode graphs are not recorded on a multi-device mesh yet: "
                                         "set options->decode_graphs to AUTO or OFF");
        if (several && o.device_sampling == PAGODA_DEVICE_SAMPLING_ON)
            fail(PAGODA_ERR_UNSUPPORTED, "sampling on the device is not offered on a multi-device mesh yet: "
                                         "set options->device_sampling to AUTO or OFF");
        if (o.pipeline_micro_batches < 0 || o.pipeline_micro_batches > 1024)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->pipeline_micro_batches must be 0-1024 (got " +
                                                  std::to_string(o.pipeline_micro_batches) + ")");
        if (o.quantized_matmul != PAGODA_QUANTIZED_MATMUL_AUTO &&
            o.quantized_matmul != PAGODA_QUANTIZED_MATMUL_EXACT)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->quantized_matmul must be a pagoda_quantized_matmul_t (got " +
                                                  std::to_string(o.quantized_matmul) + ")");
        config.quantized_activations = o.quantized_matmul == PAGODA_QUANTIZED_MATMUL_AUTO;
        if (o.kernel_choice < PAGODA_KERNEL_CHOICE_FILE || o.kernel_choice > PAGODA_KERNEL_CHOICE_RULES)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "options->kernel_choice must be a pagoda_kernel_choice_t (got " +
                                                  std::to_string(o.kernel_choice) + ")");
        config.kernel_choice = static_cast<pagoda_kernel_choice_t>(o.kernel_choice);
        if (o.kernel_choices_file != nullptr) {
            config.kernel_choices_file = o.kernel_choices_file;
            if (config.kernel_choices_file.empty())
                fail(PAGODA_ERR_INVALID_ARGUMENT, "options->kernel_choices_file is empty (NULL for none)");
        }
        config.layout = placement.layout;
        config.pipeline = placement.pipeline;
        if (me->impl->spans_processes()) config.world = me->impl->world();
        config.pipeline.micro_batches = int32_t(o.pipeline_micro_batches);
        if (o.on_output != nullptr)
            config.on_output = [fn = o.on_output, user = o.on_output_user](const Output &produced) {
                pagoda_output_t p = public_output(produced);
                fn(user, &p);
            };
        bool expected = false;
        if (!kv->engaged->compare_exchange_strong(expected, true))
            fail(PAGODA_ERR_INVALID_ARGUMENT, "the KV cache already serves another engine");
        auto engine = std::make_unique<pagoda_engine>();
        engine->cache_engaged = kv->engaged;  // from here on the engine's destructor clears it
        engine->impl = std::make_unique<pagoda::engine::Engine>(m->impl, m->tokenizer, kv->impl, std::move(config));
        *out = engine.release();
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_engine_destroy(pagoda_engine_t *engine) {
    if (engine == nullptr || engine->magic != pagoda_engine::kMagic) return;
    delete engine;
}

PAGODA_API pagoda_status_t pagoda_engine_submit_text(pagoda_engine_t *engine, const char *text,
                                                     size_t text_len,
                                                     const pagoda_request_options_t *options,
                                                     uint64_t *request_id) {
    return guarded("pagoda_engine_submit_text", [&] {
        pagoda_engine *e = pagoda::require_handle(engine, "engine");
        if (text == nullptr && text_len > 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "text is NULL");
        if (request_id == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "request_id is NULL");
        *request_id = e->impl->submit_text(std::string_view(text ? text : "", text_len),
                                           request_config(options));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_submit_tokens(pagoda_engine_t *engine, const int32_t *ids,
                                                       size_t n_ids,
                                                       const pagoda_request_options_t *options,
                                                       uint64_t *request_id) {
    return guarded("pagoda_engine_submit_tokens", [&] {
        pagoda_engine *e = pagoda::require_handle(engine, "engine");
        if (ids == nullptr && n_ids > 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "ids is NULL");
        if (request_id == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "request_id is NULL");
        *request_id = e->impl->submit_tokens(std::span<const int32_t>(ids, n_ids), request_config(options));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_abort(pagoda_engine_t *engine, uint64_t request_id) {
    return guarded("pagoda_engine_abort", [&] {
        pagoda::require_handle(engine, "engine")->impl->abort(request_id);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_step(pagoda_engine_t *engine) {
    return guarded("pagoda_engine_step", [&] {
        pagoda::require_handle(engine, "engine")->impl->step();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_follow(pagoda_engine_t *engine) {
    return guarded("pagoda_engine_follow", [&] {
        pagoda::require_handle(engine, "engine")->impl->follow();
        return PAGODA_OK;
    });
}

// The queries without a status answer what their _v2 answers (0 or NULL on failure).
PAGODA_API int pagoda_engine_has_work(const pagoda_engine_t *engine) {
    int32_t has_work = 0;
    pagoda_engine_has_work_v2(engine, &has_work);
    return has_work;
}

PAGODA_API pagoda_status_t pagoda_engine_has_work_v2(const pagoda_engine_t *engine, int32_t *has_work) {
    return guarded("pagoda_engine_has_work_v2", [&] {
        if (has_work == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "has_work is NULL");
        *has_work = 0;
        *has_work = pagoda::require_handle(engine, "engine")->impl->has_work() ? 1 : 0;
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_poll(pagoda_engine_t *engine, pagoda_output_t *output) {
    return guarded("pagoda_engine_poll", [&] {
        pagoda_engine *e = pagoda::require_handle(engine, "engine");
        const uint32_t stride = output_stride(output, 1, "output");
        return poll_into(e, output, 1, stride) == 0 ? PAGODA_ERR_EMPTY : PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_poll_batch(pagoda_engine_t *engine, pagoda_output_t *outputs,
                                                    size_t capacity, size_t *n_polled) {
    return guarded("pagoda_engine_poll_batch", [&] {
        pagoda_engine *e = pagoda::require_handle(engine, "engine");
        if (n_polled == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "n_polled is NULL");
        *n_polled = 0;
        const uint32_t stride = output_stride(outputs, capacity, "outputs");
        *n_polled = poll_into(e, outputs, capacity, stride);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_step_poll(pagoda_engine_t *engine, pagoda_output_t *outputs,
                                                   size_t capacity, size_t *n_polled) {
    return guarded("pagoda_engine_step_poll", [&] {
        pagoda_engine *e = pagoda::require_handle(engine, "engine");
        if (n_polled == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "n_polled is NULL");
        *n_polled = 0;
        // Every argument is checked before the step: a refused call has not stepped.
        const uint32_t stride = output_stride(outputs, capacity, "outputs");
        e->impl->step();
        *n_polled = poll_into(e, outputs, capacity, stride);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_get_stats(const pagoda_engine_t *engine,
                                                   pagoda_engine_stats_t *stats) {
    return guarded("pagoda_engine_get_stats", [&] {
        pagoda::engine::EngineStats s = pagoda::require_handle(engine, "engine")->impl->stats();
        pagoda_engine_stats_t full{};
        full.struct_size = sizeof(full);
        full.requests_waiting = s.requests_waiting;
        full.requests_running = s.requests_running;
        full.requests_swapped = s.requests_swapped;
        full.requests_finished = s.requests_finished;
        full.preemptions_recompute = s.preemptions_recompute;
        full.preemptions_swap = s.preemptions_swap;
        full.steps = s.steps;
        full.prompt_tokens = s.prompt_tokens;
        full.generated_tokens = s.generated_tokens;
        full.batched_sequences = s.batched_sequences;
        full.graph_steps = s.graph_steps;
        full.device_sampled_tokens = s.device_sampled_tokens;
        pagoda::write_sized(stats, full, "stats");
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_get_metrics(const pagoda_engine_t *engine,
                                                     pagoda_engine_metrics_t *metrics) {
    return guarded("pagoda_engine_get_metrics", [&] {
        pagoda_engine_metrics_t full = pagoda::require_handle(engine, "engine")->impl->metrics();
        full.struct_size = sizeof(full);
        pagoda::write_sized(metrics, full, "metrics");
        return PAGODA_OK;
    });
}

PAGODA_API size_t pagoda_engine_device_count(const pagoda_engine_t *engine) {
    size_t count = 0;
    pagoda_engine_device_count_v2(engine, &count);
    return count;
}

PAGODA_API pagoda_status_t pagoda_engine_device_count_v2(const pagoda_engine_t *engine, size_t *count) {
    return guarded("pagoda_engine_device_count_v2", [&] {
        if (count == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "count is NULL");
        *count = 0;
        *count = pagoda::require_handle(engine, "engine")->impl->device_usage().size();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_engine_get_device_stats(const pagoda_engine_t *engine, size_t index,
                                                          pagoda_device_stats_t *stats) {
    return guarded("pagoda_engine_get_device_stats", [&] {
        const std::vector<pagoda::exec::DeviceUsage> usage =
            pagoda::require_handle(engine, "engine")->impl->device_usage();
        if (index >= usage.size())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "device index " + std::to_string(index) + " is out of range (the engine runs on " +
                                                  std::to_string(usage.size()) + " devices)");
        const pagoda::exec::DeviceUsage &u = usage[index];
        pagoda_device_stats_t full{};
        full.struct_size = sizeof(full);
        std::snprintf(full.device, sizeof full.device, "%s", u.device.c_str());
        full.stage = u.stage;
        full.tp_rank = u.tp_rank;
        full.tp_size = u.tp_size;
        full.first_layer = u.first_layer;
        full.end_layer = u.end_layer;
        full.kv_heads = u.kv_heads;
        full.weight_bytes = u.weight_bytes;
        full.kv_bytes = u.kv_bytes;
        full.layer_weight_bytes = u.layer_weight_bytes;
        full.kvp_rank = u.kvp_rank;
        full.kvp_size = u.kvp_size;
        full.ep_rank = u.ep_rank;
        full.ep_size = u.ep_size;
        full.expert_weight_bytes = u.expert_weight_bytes;
        pagoda::write_sized(stats, full, "stats");
        return PAGODA_OK;
    });
}

}  // extern "C"
