#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace pagoda::bench {

namespace {

[[noreturn]] void throw_status(const std::string &what, pagoda_status_t s) {
    throw std::runtime_error(what + ": " + pagoda_status_string(s) + ": " +
                             pagoda_last_error_message());
}

void check(pagoda_status_t s, const char *what) {
    if (s != PAGODA_OK) throw_status(what, s);
}

// xorshift64*: fast enough to fill a gigabyte in well under a second.
uint64_t next(uint64_t &state) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
}

float uniform(uint64_t &state) {
    return float(next(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;  // [-1, 1)
}

uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

// Truncating conversions are fine for benchmark data; values stay finite and in range.
uint16_t to_bf16(float x) { return uint16_t(bits(x) >> 16); }

uint16_t to_f16(float x) {
    const uint32_t u = bits(x);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const int e = int((u >> 23) & 0xFF) - 127 + 15;
    if (e <= 0) return sign;  // below f16's normal range: zero
    return uint16_t(sign | (e << 10) | ((u >> 13) & 0x3FFu));
}

// Byte offsets of a block type's f16 scale fields (ggml's layouts); empty for plain types.
std::vector<size_t> scale_offsets(pagoda_dtype_t dtype) {
    switch (dtype) {
        case PAGODA_DTYPE_Q8_0:
        case PAGODA_DTYPE_Q4_0: return {0};
        case PAGODA_DTYPE_Q4_K:
        case PAGODA_DTYPE_Q5_K: return {0, 2};
        case PAGODA_DTYPE_Q6_K: return {208};
        default: return {};
    }
}

// Random blocks: random bytes, every scale 2^-7, so decoded weights are finite and not tiny.
void generate_blocks(uint64_t &state, void *dst, size_t bytes, pagoda_dtype_t dtype) {
    int64_t values = 0;
    size_t block = 0;
    pagoda_dtype_block(dtype, &values, &block);
    auto *p = static_cast<unsigned char *>(dst);
    for (size_t i = 0; i < bytes; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = static_cast<unsigned char>(state >> 56);
    }
    const uint16_t scale = 0x2000;  // 2^-7 in f16
    for (size_t b = 0; b + block <= bytes; b += block)
        for (size_t off : scale_offsets(dtype)) std::memcpy(p + b + off, &scale, 2);
}

void generate(uint64_t &state, void *dst, size_t bytes, pagoda_dtype_t dtype) {
    if (!scale_offsets(dtype).empty()) return generate_blocks(state, dst, bytes, dtype);
    const size_t size = dtype_bytes(dtype);
    const size_t n = bytes / size;
    switch (dtype) {
        case PAGODA_DTYPE_F32: {
            auto *p = static_cast<float *>(dst);
            for (size_t i = 0; i < n; ++i) p[i] = uniform(state);
            break;
        }
        case PAGODA_DTYPE_BF16: {
            auto *p = static_cast<uint16_t *>(dst);
            for (size_t i = 0; i < n; ++i) p[i] = to_bf16(uniform(state));
            break;
        }
        case PAGODA_DTYPE_F16: {
            auto *p = static_cast<uint16_t *>(dst);
            for (size_t i = 0; i < n; ++i) p[i] = to_f16(uniform(state));
            break;
        }
        default: std::memset(dst, 0, bytes); break;
    }
}

}  // namespace

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

Bench::Bench(const Options &options, pagoda_backend_t *backend)
    : options_(options), iface_(pagoda_backend_interface(backend)) {
    if (iface_ == nullptr) throw std::runtime_error("pagoda_backend_interface returned NULL");
    info_.struct_size = sizeof info_;
    check(pagoda_backend_device_info(backend, options_.device, &info_), "device_info");
    check(iface_->stream_create(iface_->self, options_.device, &stream_), "stream_create");
}

Bench::~Bench() {
    if (stream_ != nullptr) iface_->stream_synchronize(iface_->self, stream_);
    for (void *p : buffers_) iface_->buffer_free(iface_->self, options_.device, p);
    if (stream_ != nullptr) iface_->stream_destroy(iface_->self, stream_);
}

void *Bench::alloc(size_t bytes) {
    void *p = nullptr;
    check(iface_->buffer_alloc(iface_->self, options_.device, bytes, &p), "buffer_alloc");
    buffers_.push_back(p);
    return p;
}

void Bench::release(void *ptr) {
    auto it = std::find(buffers_.begin(), buffers_.end(), ptr);
    if (it == buffers_.end()) return;
    synchronize();  // nothing queued may still use it
    iface_->buffer_free(iface_->self, options_.device, ptr);
    buffers_.erase(it);
}

void Bench::fill_random(void *dst, size_t bytes, pagoda_dtype_t dtype) {
    if (host_memory()) {
        generate(rng_, dst, bytes, dtype);
        return;
    }
    // Through a host chunk: the ABI wants host memory kept until the stream has read it.
    // Past 64 MiB the random prefix is repeated by device-to-device copies, doubling each time:
    // generating gigabytes of KV cache on the host would take longer than measuring them.
    constexpr size_t kRandomPrefix = size_t(64) << 20;
    const size_t random_bytes = std::min(bytes, kRandomPrefix);
    std::vector<unsigned char> chunk(std::min(random_bytes, size_t(16) << 20));
    for (size_t done = 0; done < random_bytes; done += chunk.size()) {
        const size_t n = std::min(chunk.size(), random_bytes - done);
        generate(rng_, chunk.data(), n, dtype);
        upload(static_cast<unsigned char *>(dst) + done, chunk.data(), n);
    }
    auto *base = static_cast<unsigned char *>(dst);
    for (size_t filled = random_bytes; filled < bytes;) {
        const size_t n = std::min(filled, bytes - filled);
        check(iface_->copy(iface_->self, stream_, base + filled, base, n,
                           PAGODA_COPY_DEVICE_TO_DEVICE),
              "copy");
        filled += n;
    }
    synchronize();
}

void Bench::upload(void *dst, const void *src, size_t bytes) {
    check(iface_->copy(iface_->self, stream_, dst, src, bytes, PAGODA_COPY_HOST_TO_DEVICE), "copy");
    synchronize();
}

void Bench::launch(pagoda_op_t op, const void *args) {
    pagoda_status_t s = iface_->kernels->launch(iface_->self, stream_, op, args);
    if (s != PAGODA_OK) throw_status(std::string("launch ") + pagoda_op_name(op), s);
}

pagoda_status_t Bench::supports(pagoda_op_t op, const void *args, std::string &why) {
    pagoda_status_t s = iface_->kernels->supports(iface_->self, options_.device, op, args);
    if (s != PAGODA_OK) why = pagoda_last_error_message();
    return s;
}

void Bench::synchronize() { check(iface_->stream_synchronize(iface_->self, stream_), "stream_synchronize"); }

namespace {

// A pair of the backend's timing events on the bench's stream: device time between them.
class EventClock {
public:
    explicit EventClock(Bench &bench) : bench_(bench) {
        const pagoda_backend_iface_t &f = bench.iface();
        check(f.event_create(f.self, bench.options().device, PAGODA_EVENT_TIMING, &start_), "event_create");
        if (pagoda_status_t s = f.event_create(f.self, bench.options().device, PAGODA_EVENT_TIMING, &end_); s != PAGODA_OK) {
            f.event_destroy(f.self, start_);
            throw_status("event_create", s);
        }
    }
    ~EventClock() {
        const pagoda_backend_iface_t &f = bench_.iface();
        f.event_destroy(f.self, start_);
        f.event_destroy(f.self, end_);
    }
    EventClock(const EventClock &) = delete;
    EventClock &operator=(const EventClock &) = delete;

    void start() {
        const pagoda_backend_iface_t &f = bench_.iface();
        check(f.event_record(f.self, start_, bench_.stream()), "event_record");
    }
    // Seconds since start(), once the device got there.
    double stop() {
        const pagoda_backend_iface_t &f = bench_.iface();
        check(f.event_record(f.self, end_, bench_.stream()), "event_record");
        check(f.event_synchronize(f.self, end_), "event_synchronize");
        bench_.synchronize();  // reports a failure of the timed work
        float ms = 0.0f;
        check(f.event_elapsed(f.self, start_, end_, &ms), "event_elapsed");
        return double(ms) * 1e-3;
    }

private:
    Bench &bench_;
    pagoda_backend_event_t *start_ = nullptr;
    pagoda_backend_event_t *end_ = nullptr;
};

}  // namespace

Timing measure(Bench &bench, const std::function<void(int64_t)> &step, int repeats,
               double paired_bytes) {
    const Options &o = bench.options();
    // On a GPU the device's clock times the launches; on the host, the wall clock and a
    // synchronisation do.
    std::unique_ptr<EventClock> clock;
    if (!bench.host_memory()) clock = std::make_unique<EventClock>(bench);
    auto run = [&](int64_t first, int64_t count) {
        double t0 = 0.0;
        if (clock) clock->start(); else t0 = now();
        for (int64_t j = 0; j < count; ++j) step(first + j);
        if (clock) return clock->stop();
        bench.synchronize();
        return now() - t0;
    };
    // The first call pays for page faults and lazy set-up; the second says how long one takes.
    run(0, 1);
    const double one = std::max(run(1, 1), 1e-9);

    Timing t;
    t.repeats = repeats > 0 ? repeats : o.repeats;
    t.iterations = std::max<int64_t>(o.min_iterations, int64_t(std::ceil(o.target_seconds / one)));
    const bool paired = paired_bytes > 0 && bench.host_memory();
    std::vector<double> per_call, ratios;
    int64_t i = 2;
    for (int r = 0; r < t.repeats; ++r) {
        const double probe_rate = paired ? probe_read_rate(bench, o.target_seconds / 3) : 0.0;
        per_call.push_back(run(i, t.iterations) / double(t.iterations));
        i += t.iterations;
        if (paired) ratios.push_back(paired_bytes / per_call.back() / probe_rate);
    }
    if (paired) {
        std::sort(ratios.begin(), ratios.end());
        const size_t m = ratios.size();
        t.paired_fraction = m % 2 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
    }
    std::sort(per_call.begin(), per_call.end());
    const size_t n = per_call.size();
    t.seconds = n % 2 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2]);
    t.best_seconds = per_call.front();
    return t;
}

int rotation_copies(const Options &options, size_t bytes) {
    if (bytes == 0) return 1;
    return int(std::max<size_t>(1, (options.rotate_bytes + bytes - 1) / bytes));
}

std::vector<void *> rotated_buffers(Bench &bench, size_t bytes, pagoda_dtype_t dtype, int copies) {
    std::vector<void *> out(static_cast<size_t>(std::max(copies, 1)));
    out[0] = bench.alloc(bytes);
    bench.fill_random(out[0], bytes, dtype);
    const pagoda_backend_iface_t &f = bench.iface();
    for (size_t c = 1; c < out.size(); ++c) {
        out[c] = bench.alloc(bytes);
        f.copy(f.self, bench.stream(), out[c], out[0], bytes, PAGODA_COPY_DEVICE_TO_DEVICE);
    }
    return out;
}

void JsonLine::begin_field(const char *key) {
    text_ += text_.empty() ? '{' : ',';
    text_ += '"';
    text_ += key;
    text_ += "\":";
}

JsonLine &JsonLine::add(const char *key, const std::string &value) {
    begin_field(key);
    text_ += '"';
    for (char c : value) {
        if (c == '"' || c == '\\') text_ += '\\';
        text_ += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
    text_ += '"';
    return *this;
}

JsonLine &JsonLine::add(const char *key, int64_t value) {
    begin_field(key);
    text_ += std::to_string(value);
    return *this;
}

JsonLine &JsonLine::add(const char *key, double value) {
    char number[32];
    if (std::isfinite(value))
        std::snprintf(number, sizeof number, "%.4g", value);
    else
        std::snprintf(number, sizeof number, "null");
    begin_field(key);
    text_ += number;
    return *this;
}

JsonLine JsonLine::start(const Bench &bench, const char *name) {
    JsonLine line;
    line.add("bench", name).add("backend", bench.options().backend);
    if (bench.host_memory()) line.add("threads", bench.options().threads);
    return line;
}

void JsonLine::print() const {
    std::printf("%s}\n", text_.c_str());
    std::fflush(stdout);
}

void add_rates(JsonLine &line, const Bench &bench, const Timing &t, double bytes, double flops) {
    line.add("seconds", t.seconds).add("best_seconds", t.best_seconds);
    line.add("iterations", t.iterations).add("repeats", t.repeats);
    if (bytes > 0) line.add("gb_per_s", bytes / t.seconds / 1e9);
    if (flops > 0) line.add("gflop_per_s", flops / t.seconds / 1e9);
    if (bytes > 0 && bench.bandwidth > 0) {
        // Other work on the machine only ever slows a repeat down: best against best is the
        // least disturbed comparison; median against median says how typical it was.
        line.add("fraction_of_bandwidth", bytes / t.best_seconds / bench.bandwidth);
        if (bench.bandwidth_median > 0)
            line.add("median_fraction_of_bandwidth", bytes / t.seconds / bench.bandwidth_median);
    }
    if (t.paired_fraction > 0) line.add("paired_fraction_of_bandwidth", t.paired_fraction);
}

void add_goal(JsonLine &line, const char *figure_name, double figure, double goal) {
    line.add("figure_name", figure_name).add("figure", figure).add("goal", goal);
}

void print_skipped(JsonLine line, const std::string &why) { line.add("skipped", why).print(); }

const char *dtype_name(pagoda_dtype_t dtype) { return pagoda_dtype_name(dtype); }

size_t dtype_bytes(pagoda_dtype_t dtype) { return pagoda_dtype_size(dtype); }

size_t row_bytes(pagoda_dtype_t dtype, int64_t values) {
    int64_t block_values = 0;
    size_t block_bytes = 0;
    if (pagoda_dtype_block(dtype, &block_values, &block_bytes) != PAGODA_OK) return 0;
    return size_t(values / block_values) * block_bytes;
}

bool wanted(const Options &options, const char *bench) {
    if (options.benches.empty()) return true;
    return std::find(options.benches.begin(), options.benches.end(), bench) !=
           options.benches.end();
}

}  // namespace pagoda::bench
