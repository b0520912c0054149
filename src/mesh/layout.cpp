#include "mesh/layout.hpp"

#include <numeric>

#include "common/error.hpp"

namespace pagoda::mesh {

namespace {

[[noreturn]] void mismatch(const std::string &what) { throw Error(PAGODA_ERR_INVALID_ARGUMENT, what); }

// Row-major coordinates of device `index` over `axes` (the last axis fastest).
std::vector<int32_t> coordinates(const std::vector<std::pair<std::string, int32_t>> &axes, int32_t index) {
    std::vector<int32_t> c(axes.size());
    for (size_t i = axes.size(); i-- > 0;) {
        c[i] = index % axes[i].second;
        index /= axes[i].second;
    }
    return c;
}

}  // namespace

void check_tensor_parallel(const SplitShape &shape, int32_t tp) {
    const std::string at = "tensor parallelism of " + std::to_string(tp) + ": ";
    if (tp < 1) mismatch(at + "the degree must be at least 1");
    if (shape.heads % tp != 0)
        mismatch(at + "the model's " + std::to_string(shape.heads) + " query heads do not split evenly");
    if (shape.intermediate % tp != 0)
        mismatch(at + "the MLP's " + std::to_string(shape.intermediate) + " columns do not split evenly");
    if (tp <= shape.kv_heads ? shape.kv_heads % tp != 0 : tp % shape.kv_heads != 0)
        mismatch(at + "the model's " + std::to_string(shape.kv_heads) +
                 " KV heads neither split evenly nor replicate evenly (the degree must divide them or be a multiple of them)");
}

void check_expert_parallel(const SplitShape &shape, int32_t width, int32_t ep) {
    const std::string at = "expert parallelism of " + std::to_string(ep) + ": ";
    if (ep == 1) return;
    if (ep < 1) mismatch(at + "the degree must be at least 1");
    if (shape.experts == 0) mismatch(at + "the model is dense (it has no experts to split)");
    if (width % ep != 0)
        mismatch(at + "it does not divide the stage's " + std::to_string(width) + " devices");
    if (shape.experts % ep != 0)
        mismatch(at + "the model's " + std::to_string(shape.experts) + " experts do not split evenly");
    if (shape.expert_intermediate % (width / ep) != 0)
        mismatch(at + "each expert's " + std::to_string(shape.expert_intermediate) +
                 " MLP columns do not split evenly over the " + std::to_string(width / ep) + " devices of a group");
}

Layout Layout::single_device(int32_t n_layers) {
    Layout l;
    l.stages_.push_back({0, n_layers, 1, 1, {0}});
    l.places_.push_back({0, 0});
    return l;
}

Layout::Layout(const Mesh &mesh, const LayoutSpec &plan) {
    const int32_t n_devices = int32_t(mesh.device_count());
    kvp_ = mesh.axis("kvp") > 0 ? mesh.axis("kvp") : 1;
    const int32_t per_copy = n_devices / kvp_;  // the devices one kvp copy of the layout spans
    const std::vector<StageSpec> &stages = plan.stages;
    if (plan.devices != per_copy)
        mismatch("the plan is for a mesh of " + std::to_string(plan.devices) +
                 " devices, this mesh has " + std::to_string(per_copy) +
                 (kvp_ > 1 ? " in each of its kvp=" + std::to_string(kvp_) + " copies" : ""));
    int32_t width = 0;
    for (const StageSpec &s : stages) width += s.tensor_parallel;
    if (width != per_copy)
        mismatch("the plan's stages use " + std::to_string(width) + " devices, the mesh has " +
                 std::to_string(per_copy) + (kvp_ > 1 ? " per kvp copy" : ""));
    for (const auto &d : mesh.devices())
        if (d->backend() != mesh.devices().front()->backend())
            throw Error(PAGODA_ERR_UNSUPPORTED,
                        "the mesh mixes backends (" + mesh.devices().front()->name() + ", " + d->name() +
                            "): stages on different backends are not executed yet");

    for (const auto &[name, size] : mesh.axes()) {
        if (name != "pp" && name != "tp" && name != "ep" && name != "kvp" && name != "dp")
            mismatch("mesh axis '" + name + "' is not one of pp, tp, ep, kvp, dp");
        if (name == "dp" && size > 1)
            throw Error(PAGODA_ERR_UNSUPPORTED, "mesh axis dp=" + std::to_string(size) +
                                                    ": data parallelism is not executed yet (serve each replica with its own engine)");
    }
    const bool named = !mesh.axes().empty();
    const int32_t pp = mesh.axis("pp") > 0 ? mesh.axis("pp") : 1;
    const int32_t tp = mesh.axis("tp") > 0 ? mesh.axis("tp") : 1;
    const int32_t ep = mesh.axis("ep") > 0 ? mesh.axis("ep") : 1;
    if (named && int32_t(stages.size()) != pp)
        mismatch("the plan has " + std::to_string(stages.size()) + " pipeline stages but the mesh's axes say pp=" +
                 std::to_string(pp));

    int32_t next_device = 0;
    for (size_t k = 0; k < stages.size(); ++k) {
        const StageSpec &s = stages[k];
        if (named && s.tensor_parallel != tp * ep)
            mismatch("stage " + std::to_string(k) + " of the plan is " + std::to_string(s.tensor_parallel) +
                     " devices wide but the mesh's axes say tp=" + std::to_string(tp) +
                     (ep > 1 ? " × ep=" + std::to_string(ep) : ""));
        if (named && s.expert_parallel != ep)
            mismatch("stage " + std::to_string(k) + " of the plan splits the experts " +
                     std::to_string(s.expert_parallel) + " ways but the mesh's axes say ep=" + std::to_string(ep));
        check_tensor_parallel(plan.shape, s.tensor_parallel);
        check_expert_parallel(plan.shape, s.tensor_parallel, s.expert_parallel);
        StagePlacement p;
        p.first_layer = int32_t(s.first_layer);
        p.end_layer = int32_t(s.end_layer);
        p.tensor_parallel = s.tensor_parallel;
        p.expert_parallel = s.expert_parallel;
        p.devices.assign(size_t(s.tensor_parallel * kvp_), -1);
        if (!named) {
            std::iota(p.devices.begin(), p.devices.end(), next_device);
            next_device += int32_t(p.devices.size());
        }
        stages_.push_back(std::move(p));
    }
    places_.resize(size_t(n_devices));
    if (named) {
        for (int32_t d = 0; d < n_devices; ++d) {
            const std::vector<int32_t> c = coordinates(mesh.axes(), d);
            int32_t stage = 0, rank = 0, group = 0, share = 0;
            for (size_t i = 0; i < c.size(); ++i) {
                if (mesh.axes()[i].first == "pp") stage = c[i];
                if (mesh.axes()[i].first == "tp") rank = c[i];
                if (mesh.axes()[i].first == "ep") group = c[i];
                if (mesh.axes()[i].first == "kvp") share = c[i];
            }
            stages_[size_t(stage)].devices[size_t((share * ep + group) * tp + rank)] = d;
        }
    }
    for (size_t k = 0; k < stages_.size(); ++k) {
        const int32_t tp_k = stages_[k].tensor_parallel;
        for (size_t i = 0; i < stages_[k].devices.size(); ++i)
            places_[size_t(stages_[k].devices[i])] = {int32_t(k), int32_t(i) % tp_k, int32_t(i) / tp_k};
    }
}

std::string Layout::describe() const {
    std::string out = "pp=" + std::to_string(stages_.size()) + " (layers";
    for (size_t k = 0; k < stages_.size(); ++k)
        out += (k ? " | " : " ") + std::to_string(stages_[k].first_layer) + "-" +
               std::to_string(stages_[k].end_layer - 1);
    out += "), tp=";
    for (size_t k = 0; k < stages_.size(); ++k)
        out += (k ? "/" : "") + std::to_string(stages_[k].tensor_parallel);
    bool experts_split = false;
    for (const StagePlacement &s : stages_) experts_split = experts_split || s.expert_parallel > 1;
    if (experts_split) {
        out += ", ep=";
        for (size_t k = 0; k < stages_.size(); ++k)
            out += (k ? "/" : "") + std::to_string(stages_[k].expert_parallel);
    }
    if (kvp_ > 1) out += ", kvp=" + std::to_string(kvp_);
    return out;
}

}  // namespace pagoda::mesh
