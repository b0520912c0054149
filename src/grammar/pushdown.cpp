#include "grammar/pushdown.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace pagoda::grammar {

Points::Points(const Grammar &grammar) : byte_sets_(grammar.byte_sets), root_(grammar.root) {
    // Points first, rule by rule, so a rule's alternatives can be found by rule index.
    rule_first_alt_.push_back(0);
    for (const Rule &rule : grammar.rules) {
        for (const Sequence &seq : rule.alternatives) {
            alt_starts_.push_back(uint32_t(kind_.size()));
            for (const Element &e : seq) {
                kind_.push_back(e.kind == Element::Kind::bytes ? Kind::bytes : Kind::rule);
                arg_.push_back(e.index);
            }
            kind_.push_back(Kind::end);
            arg_.push_back(0);
        }
        rule_first_alt_.push_back(uint32_t(alt_starts_.size()));
    }
}

Pushdown::Pushdown(std::shared_ptr<const Points> points) : points_(std::move(points)) {}

namespace {

uint64_t frame_hash(uint32_t point, uint32_t parent) {
    uint64_t h = (uint64_t{point} << 32 | parent) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

}  // namespace

uint32_t Pushdown::frame(uint32_t point, uint32_t parent) {
    if (slots_.empty() || (frames_.size() + 1) * 2 > slots_.size()) {
        // Grow to keep the table at most half full, re-placing every frame.
        slots_.assign(std::max<size_t>(64, slots_.size() * 2), 0);
        const size_t mask = slots_.size() - 1;
        for (uint32_t id = 0; id < frames_.size(); ++id) {
            size_t i = frame_hash(frames_[id].point, frames_[id].parent) & mask;
            while (slots_[i] != 0) i = (i + 1) & mask;
            slots_[i] = id + 1;
        }
    }
    const size_t mask = slots_.size() - 1;
    for (size_t i = frame_hash(point, parent) & mask;; i = (i + 1) & mask) {
        const uint32_t slot = slots_[i];
        if (slot == 0) {
            frames_.push_back({point, parent});
            seen_.push_back(0);
            slots_[i] = uint32_t(frames_.size());
            return slots_[i] - 1;
        }
        const Frame &f = frames_[slot - 1];
        if (f.point == point && f.parent == parent) return slot - 1;
    }
}

// Resolves the frames in work_ until each live stack has a bytes point on top: a finished
// alternative returns to its caller's next point, a rule point calls the rule's alternatives.
// A call in the last position of an alternative is a tail call: the callee returns straight to
// the caller's caller, so `x ::= "a" x | ""` runs in constant stack depth.
void Pushdown::close(std::vector<uint32_t> &out, StepEnds &ends) {
    while (!work_.empty()) {
        const uint32_t id = work_.back();
        work_.pop_back();
        if (seen_[id] == pass_) continue;
        seen_[id] = pass_;
        const Frame f = frames_[id];
        switch (points_->kind(f.point)) {
        case Points::Kind::bytes:
            out.push_back(id);
            if (out.size() > kMaxLiveStacks) {
                work_.clear();
                throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                            "the grammar is too ambiguous: more than " +
                                std::to_string(kMaxLiveStacks) + " parses stay open at once");
            }
            break;
        case Points::Kind::end:
            if (f.parent == kBottom) {
                ends.accepted = true;
            } else if (f.parent == kUnknownCaller) {
                ends.reached_caller = true;
            } else {
                const Frame caller = frames_[f.parent];
                work_.push_back(frame(caller.point + 1, caller.parent));
            }
            break;
        case Points::Kind::rule: {
            const bool tail = points_->kind(f.point + 1) == Points::Kind::end;
            const uint32_t return_to = tail ? f.parent : id;
            for (uint32_t start : points_->callee_starts(f.point)) work_.push_back(frame(start, return_to));
            break;
        }
        }
    }
    std::sort(out.begin(), out.end());
}

void Pushdown::start(std::vector<uint32_t> &out, StepEnds &ends) {
    out.clear();
    ++pass_;
    for (uint32_t p : points_->root_starts()) work_.push_back(frame(p, kBottom));
    close(out, ends);
}

void Pushdown::expand(uint32_t stack, std::vector<uint32_t> &out, StepEnds &ends) {
    out.clear();
    ++pass_;
    work_.push_back(stack);
    close(out, ends);
}

void Pushdown::step(std::span<const uint32_t> in, uint8_t byte, std::vector<uint32_t> &out,
                    StepEnds &ends) {
    out.clear();
    ++pass_;
    for (uint32_t id : in) {
        const Frame f = frames_[id];
        if (points_->bytes(f.point).has(byte)) work_.push_back(frame(f.point + 1, f.parent));
    }
    close(out, ends);
}

}  // namespace pagoda::grammar
