// plan.h: planning a model on a mesh, plans as JSON, and the getters.
#include <fstream>
#include <memory>
#include <sstream>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/owned_text.hpp"
#include "capi/sized_struct.hpp"
#include "capi/plan_handle.hpp"
#include "model/hf_config.hpp"
#include "pagoda/plan.h"
#include "plan/plan_json.hpp"

using pagoda::fail;
using pagoda::guarded;
namespace plan = pagoda::plan;

namespace {

pagoda_plan_options_t default_plan_options() {
    pagoda_plan_options_t o{};
    o.struct_size = sizeof(o);
    o.objective = PAGODA_PLAN_LATENCY;
    o.micro_batches = 1;
    o.step_tokens = 2048;
    o.granularity = 8;
    return o;
}

// The C options as a planner request; `devices` is the mesh's device count when a mesh handle
// was given (0 otherwise).
plan::PlanRequest plan_request(const pagoda_plan_options_t *options, size_t devices) {
    const pagoda_plan_options_t o = pagoda::read_sized(options, default_plan_options(), "options");
    plan::PlanRequest r;
    if (o.mesh_shape != nullptr && o.mesh_shape[0] != '\0') {
        r.mesh = plan::parse_mesh_shape(o.mesh_shape);
        if (devices > 0 && size_t(r.mesh.device_count()) != devices)
            fail(PAGODA_ERR_INVALID_ARGUMENT, std::string("options->mesh_shape \"") + o.mesh_shape + "\" has " +
                                                  std::to_string(r.mesh.device_count()) + " devices but the mesh has " +
                                                  std::to_string(devices));
    } else if (devices > 0) {
        r.mesh = {1, int32_t(devices)};
    } else {
        fail(PAGODA_ERR_INVALID_ARGUMENT, "no mesh: pass a mesh handle or set options->mesh_shape (\"NxM\")");
    }
    if (o.objective != PAGODA_PLAN_LATENCY && o.objective != PAGODA_PLAN_THROUGHPUT)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "options->objective is " + std::to_string(o.objective) +
                                              ": want PAGODA_PLAN_LATENCY or PAGODA_PLAN_THROUGHPUT");
    r.partition.objective =
        o.objective == PAGODA_PLAN_LATENCY ? plan::PartitionObjective::Latency : plan::PartitionObjective::Throughput;
    r.partition.micro_batches = o.micro_batches;
    r.partition.stages = o.stages;
    r.partition.tensor_parallel = o.tensor_parallel;
    r.partition.expert_parallel = o.expert_parallel;
    r.partition.epsilon_seconds = o.epsilon_seconds;
    if (o.device != nullptr && o.device[0] != '\0') r.device = o.device;
    if (o.cost_file != nullptr) r.cost_file = o.cost_file;
    r.workload.tokens = o.step_tokens;
    r.workload.context = o.context_tokens;
    r.workload.kv_tokens = o.kv_tokens;
    // Checked whether or not a prompt length asks for slicing: a bad value is never let through.
    if (o.prompt_tokens < 0)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "options->prompt_tokens is " + std::to_string(o.prompt_tokens) +
                                              ": want 0 (no slicing) or a prompt length");
    if (o.granularity <= 0)
        fail(PAGODA_ERR_INVALID_ARGUMENT, "options->granularity is " + std::to_string(o.granularity) +
                                              ": want a positive number of tokens");
    r.prompt_tokens = o.prompt_tokens;
    r.granularity = o.granularity;
    return r;
}

// Bytes per weight of `m` as the `device` preset serves them: as stored on the CPU (whose
// kernels read f16, bf16 and quantized blocks as they are), 0 (the preset's bf16) for a GPU
// preset.
double served_weight_bytes(const pagoda::model::Model &m, const std::string &device) {
    if (device != "cpu" || m.parameter_count() == 0) return 0;
    return double(m.weight_bytes()) / double(m.parameter_count());
}

pagoda_status_t hand_out(plan::Plan p, pagoda_plan_t **out) {
    auto handle = std::make_unique<pagoda_plan>();
    handle->impl = std::move(p);
    *out = handle.release();
    return PAGODA_OK;
}

std::string read_text(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(PAGODA_ERR_IO, std::string("cannot read ") + path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const plan::Plan &plan_of(const pagoda_plan_t *p) {
    return pagoda::require_handle(const_cast<pagoda_plan_t *>(p), "plan")->impl;
}

}  // namespace

extern "C" {

PAGODA_API void pagoda_plan_options_init(pagoda_plan_options_t *options, size_t size) {
    pagoda::init_sized(options, size, default_plan_options());
}

PAGODA_API pagoda_status_t pagoda_plan_create(const pagoda_model_t *model, const pagoda_mesh_t *mesh,
                                              const pagoda_plan_options_t *options, pagoda_plan_t **out) {
    return guarded("pagoda_plan_create", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        const auto *m = pagoda::require_handle(const_cast<pagoda_model_t *>(model), "model");
        size_t devices = 0;
        if (mesh != nullptr)
            devices = pagoda::require_handle(const_cast<pagoda_mesh_t *>(mesh), "mesh")->impl->device_count();
        plan::PlanRequest request = plan_request(options, devices);
        request.weight_bytes = served_weight_bytes(*m->impl, request.device);
        request.expert_column_block = pagoda::model::expert_column_block(*m->impl);
        return hand_out(plan::make_plan(plan::model_shape(m->impl->config()), request), out);
    });
}

PAGODA_API pagoda_status_t pagoda_plan_create_from_config(const char *config_path,
                                                          const pagoda_plan_options_t *options,
                                                          pagoda_plan_t **out) {
    return guarded("pagoda_plan_create_from_config", [&] {
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        if (config_path == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "config_path is NULL");
        const pagoda::model::ModelConfig config = pagoda::model::parse_hf_config(read_text(config_path), config_path);
        const plan::PlanRequest request = plan_request(options, 0);
        return hand_out(plan::make_plan(plan::model_shape(config), request), out);
    });
}

PAGODA_API void pagoda_plan_destroy(pagoda_plan_t *plan) {
    if (plan != nullptr && plan->magic == pagoda_plan::kMagic) delete plan;
}

PAGODA_API pagoda_status_t pagoda_plan_to_json(const pagoda_plan_t *plan, char **json) {
    return guarded("pagoda_plan_to_json", [&] {
        const plan::Plan &p = plan_of(plan);
        if (json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "json is NULL");
        const std::string text = plan::plan_to_json(p);
        *json = pagoda::owned_text(text);
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_plan_from_json(const char *json, pagoda_plan_t **out) {
    return guarded("pagoda_plan_from_json", [&] {
        if (json == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "json is NULL");
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        return hand_out(plan::plan_from_json(json), out);
    });
}

PAGODA_API pagoda_status_t pagoda_plan_get_summary(const pagoda_plan_t *plan, pagoda_plan_summary_t *summary) {
    return guarded("pagoda_plan_get_summary", [&] {
        const plan::Plan &p = plan_of(plan);
        pagoda_plan_summary_t s{};
        s.struct_size = sizeof(s);
        s.n_stages = p.partition.stages.size();
        s.latency_seconds = p.partition.latency_seconds;
        s.max_stage_seconds = p.partition.max_stage_seconds;
        s.throughput_per_second = p.partition.max_stage_seconds > 0 ? 1.0 / p.partition.max_stage_seconds : 0.0;
        s.objective_seconds = p.partition.objective_seconds;
        if (p.slicing) {
            s.n_slices = p.slicing->optimal.lengths.size();
            s.sliced_prefill_seconds = p.slicing->optimal.latency_seconds;
            s.uniform_prefill_seconds = p.slicing->best_uniform.latency_seconds;
        }
        pagoda::write_sized(summary, s, "summary");
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_plan_get_stage(const pagoda_plan_t *plan, size_t index, pagoda_plan_stage_t *stage) {
    return guarded("pagoda_plan_get_stage", [&] {
        const plan::Plan &p = plan_of(plan);
        if (index >= p.partition.stages.size())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "stage index " + std::to_string(index) + " is out of range (the plan has " +
                                                  std::to_string(p.partition.stages.size()) + " stages)");
        const plan::Stage &st = p.partition.stages[index];
        pagoda_plan_stage_t s{};
        s.struct_size = sizeof(s);
        s.first_layer = st.first_layer;
        s.end_layer = st.end_layer;
        s.nodes = st.shape.nodes;
        s.devices = st.shape.devices;
        s.tensor_parallel = st.tensor_parallel;
        s.has_embedding = st.has_embedding ? 1 : 0;
        s.has_head = st.has_head ? 1 : 0;
        s.seconds = st.seconds;
        s.memory_bytes = st.memory_bytes;
        s.expert_parallel = st.expert_parallel;
        pagoda::write_sized(stage, s, "stage");
        return PAGODA_OK;
    });
}

// Answers what pagoda_plan_slice_length_v2 answers (0 on failure).
PAGODA_API int64_t pagoda_plan_slice_length(const pagoda_plan_t *plan, size_t index) {
    int64_t length = 0;
    pagoda_plan_slice_length_v2(plan, index, &length);
    return length;
}

PAGODA_API pagoda_status_t pagoda_plan_slice_length_v2(const pagoda_plan_t *plan, size_t index,
                                                      int64_t *length) {
    return guarded("pagoda_plan_slice_length_v2", [&] {
        if (length == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "length is NULL");
        *length = 0;
        const pagoda_plan &p = *pagoda::require_handle(plan, "plan");
        if (!p.impl.slicing)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "slice index " + std::to_string(index) +
                                                  " is out of range (the plan has no slices: it was "
                                                  "made without prompt_tokens)");
        const std::vector<int64_t> &l = p.impl.slicing->optimal.lengths;
        if (index >= l.size())
            fail(PAGODA_ERR_INVALID_ARGUMENT, "slice index " + std::to_string(index) +
                                                  " is out of range (the plan has " +
                                                  std::to_string(l.size()) + " slices)");
        *length = l[index];
        return PAGODA_OK;
    });
}

}  // extern "C"
