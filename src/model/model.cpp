// open_model: a GGUF file or a Hugging Face folder behind one Model. The format-specific subclass
// keeps its loader alive, since the tensors point into the loader's mappings. Opening also pages
// the weights in (so the reported fraction measures the real disk work, and the first forward
// pass does not stall on page faults). Block-quantized tensors stay as the file stores them: the
// executor hands them to kernels that decode them, or widens them for a backend without such
// kernels (exec/llama_weights.cpp).
#include "model/model.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <utility>

#include "common/error.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_vocabulary.hpp"
#include "model/hf_checkpoint.hpp"
#include "model/quant_blocks.hpp"

namespace pagoda::model {

namespace {

// Stage names, as the progress callback sees them.
constexpr const char *kReadingMetadata = "reading metadata";
constexpr const char *kCheckingTensors = "checking tensors";
constexpr const char *kPagingIn = "paging in weights";

// Share of the fraction the metadata and checking stages take; paging in takes the rest.
constexpr double kMetadataShare = 0.02;
constexpr double kCheckingShare = 0.03;
// Report at least this often while paging in one large tensor.
constexpr uint64_t kReportBytes = 16ull << 20;

// Reports progress and enforces cancellation, the same way at every report.
class OpeningProgress {
public:
    OpeningProgress(const std::string &path, const ProgressFn &fn, const std::atomic<bool> *cancel)
        : path_(path), fn_(fn), cancel_(cancel) {}

    void report(double fraction, const char *stage) {
        // Rounding of the byte shares must never make the fraction step back or overshoot.
        fraction_ = std::clamp(fraction, fraction_, 1.0);
        if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) cancelled();
        if (fn_ && !fn_(fraction_, stage)) cancelled();
    }

private:
    [[noreturn]] void cancelled() const {
        throw Error(PAGODA_ERR_CANCELLED, path_ + ": opening cancelled");
    }

    const std::string &path_;
    const ProgressFn &fn_;
    const std::atomic<bool> *cancel_;
    double fraction_ = 0.0;
};

uint64_t element_count(const TensorRef &t) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= uint64_t(d);
    return n;
}

// The float and quantized block types are weights; the integer types cannot be.
void check_weight_type(const TensorRef &t) {
    if (t.type == TensorType::I32 || t.type == TensorType::I64)
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    t.file + ": tensor '" + t.name + "' has type " + tensor_type_name(t.type) +
                        ", which is not a weight type (F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, "
                        "Q6_K)");
}

// Touches one byte per page of every tensor (after asking the kernel to read ahead), so the page
// cache holds the weights when opening returns and the fraction follows the real reads.
void page_in(const TensorTable &tensors, OpeningProgress &progress, double begin, double share,
             uint64_t total_bytes) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096);
    uint64_t done = 0;
    auto fraction = [&] {
        return begin + share * double(done) / double(std::max<uint64_t>(total_bytes, 1));
    };
    for (const auto &[name, t] : tensors.all()) {
        const auto start = reinterpret_cast<uintptr_t>(t.data);
        const uintptr_t aligned = start / page * page;
        // Advice only: a failure costs speed, not correctness.
        (void)::madvise(reinterpret_cast<void *>(aligned), size_t(start + t.bytes - aligned),
                        MADV_WILLNEED);
        // One read per page the tensor touches, the first and last partial pages included.
        const uintptr_t end = start + t.bytes;
        uint64_t since_report = 0;
        unsigned char sink = 0;
        for (uintptr_t p = aligned; p < end; p += page) {
            const uintptr_t at = std::max(p, start);
            sink = static_cast<unsigned char>(
                sink ^ *reinterpret_cast<const volatile unsigned char *>(at));
            since_report += std::min<uint64_t>(p + page, end) - at;
            if (since_report >= kReportBytes) {
                done += since_report;
                since_report = 0;
                progress.report(fraction(), kPagingIn);
            }
        }
        (void)sink;
        done += since_report;
        progress.report(fraction(), kPagingIn);
    }
}

// What both formats share: the fields open_model fills.
class LoadedModel : public Model {
public:
    void describe(const std::string &source, SourceFormat format, const ModelConfig &config) {
        source_ = source;
        format_ = format;
        config_ = config;
    }
    void set_weights(TensorTable tensors, uint64_t parameters, uint64_t bytes) {
        tensors_ = std::move(tensors);
        parameter_count_ = parameters;
        weight_bytes_ = bytes;
    }
};

class GgufBackedModel final : public LoadedModel {
public:
    explicit GgufBackedModel(GgufModel gguf) : gguf_(std::move(gguf)) {}
    const GgufVocabulary *gguf_vocabulary() const noexcept override { return &gguf_.vocabulary; }
    const GgufModel &gguf() const noexcept { return gguf_; }
    std::vector<const MappedFile *> mappings() const override { return {&gguf_.file.mapping()}; }

private:
    GgufModel gguf_;  // owns the mapping the tensors point into
};

class HfBackedModel final : public LoadedModel {
public:
    explicit HfBackedModel(HfCheckpoint checkpoint) : checkpoint_(std::move(checkpoint)) {}
    const HfCheckpoint &checkpoint() const noexcept { return checkpoint_; }
    std::vector<const MappedFile *> mappings() const override {
        std::vector<const MappedFile *> out;
        for (const SafetensorsFile &shard : checkpoint_.shards()) out.push_back(&shard.mapping());
        return out;
    }

private:
    HfCheckpoint checkpoint_;  // owns the shards' mappings the tensors point into
};

// Pages in and counts the tensors of `model`, whose loader made the table `loaded` pointing into
// its mappings.
void finish_opening(LoadedModel &model, const TensorTable &loaded, OpeningProgress &progress) {
    uint64_t bytes = 0, parameters = 0;
    for (const auto &[name, t] : loaded.all()) {
        check_weight_type(t);
        bytes += t.bytes;
        parameters += element_count(t);
    }
    const double begin = kMetadataShare + kCheckingShare;
    page_in(loaded, progress, begin, 1.0 - begin, bytes);
    model.set_weights(loaded, parameters, bytes);
    progress.report(1.0, kPagingIn);
}

}  // namespace

int64_t expert_column_block(const Model &model) {
    const ModelConfig &c = model.config();
    for (int64_t l = 0; l < c.n_layers; ++l) {
        if (!c.is_sparse(l)) continue;
        const std::string experts = "model.layers." + std::to_string(l) + ".mlp.experts.";
        const TensorRef *down = model.tensors().find(experts + "down_proj.weight");  // stacked
        if (down == nullptr) down = model.tensors().find(experts + "0.down_proj.weight");
        return down == nullptr ? 1 : int64_t(block_layout(down->type).elements);
    }
    return 1;
}

std::shared_ptr<const Model> open_model(const std::string &path, const ProgressFn &progress,
                                        const std::atomic<bool> *cancel) {
    OpeningProgress report(path, progress, cancel);
    report.report(0.0, kReadingMetadata);

    std::error_code ec;
    const bool folder = std::filesystem::is_directory(path, ec);
    if (folder) {
        // HfCheckpoint reads config.json and checks the tensors in one step.
        auto model = std::make_shared<HfBackedModel>(HfCheckpoint(path));
        report.report(kMetadataShare + kCheckingShare, kCheckingTensors);
        model->describe(path, SourceFormat::HuggingFace, model->checkpoint().config());
        finish_opening(*model, model->checkpoint().tensors(), report);
        return model;
    }

    GgufFile file(path);  // NOT_FOUND when `path` is neither a folder nor a file
    ModelConfig config = gguf_model_config(file);
    report.report(kMetadataShare, kReadingMetadata);
    TensorTable tensors = gguf_tensor_table(file, config);
    GgufVocabulary vocabulary = read_gguf_vocabulary(file);
    report.report(kMetadataShare + kCheckingShare, kCheckingTensors);
    // Moving the file moves its mapping's handle, not the mapped memory the tensors point into.
    auto model = std::make_shared<GgufBackedModel>(
        GgufModel{std::move(file), std::move(config), std::move(tensors), std::move(vocabulary)});
    model->describe(path, SourceFormat::Gguf, model->gguf().config);
    finish_opening(*model, model->gguf().tensors, report);
    return model;
}

}  // namespace pagoda::model
