// The grammar run as a pushdown automaton over bytes. A stack of frames says where parsing is:
// the top frame's point (a position inside one alternative of a rule) and, below it, the frames
// to return to. Frames are hash-consed (a frame is its point and its parent's id), so equal
// stacks are the same id, a set of stacks is a sorted vector of ids, and stacks share their
// common bottoms (the persistent stack XGrammar describes). Ambiguity keeps several stacks
// alive at once; the set is deduplicated at every byte.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "grammar/grammar.hpp"

namespace pagoda::grammar {

// The grammar flattened: every position of every alternative is a point, numbered so that the
// next position is point + 1; an alternative's last point is its end.
class Points {
public:
    enum class Kind : uint8_t { bytes, rule, end };

    explicit Points(const Grammar &grammar);

    Kind kind(uint32_t point) const { return kind_[point]; }
    // The byte set of a bytes point.
    const ByteSet &bytes(uint32_t point) const { return byte_sets_[arg_[point]]; }
    // The first points of the alternatives of the rule a rule point calls.
    std::span<const uint32_t> callee_starts(uint32_t point) const {
        const uint32_t rule = arg_[point];
        return {alt_starts_.data() + rule_first_alt_[rule],
                rule_first_alt_[rule + 1] - rule_first_alt_[rule]};
    }
    std::span<const uint32_t> root_starts() const {
        return {alt_starts_.data() + rule_first_alt_[root_],
                rule_first_alt_[root_ + 1] - rule_first_alt_[root_]};
    }
    size_t size() const { return kind_.size(); }

private:
    std::vector<Kind> kind_;
    std::vector<uint32_t> arg_;              // byte set index or called rule
    std::vector<uint32_t> alt_starts_;       // per rule, its alternatives' first points
    std::vector<uint32_t> rule_first_alt_;   // rule -> offset into alt_starts_ (size rules + 1)
    std::vector<ByteSet> byte_sets_;
    uint32_t root_ = 0;
};

// Below the root frame: popping it means the whole text is in the language.
constexpr uint32_t kBottom = UINT32_MAX;
// Below a frame whose caller is unknown (token-mask precomputation): popping it means the
// outcome depends on the caller.
constexpr uint32_t kUnknownCaller = UINT32_MAX - 1;

// A stack set's size is bounded: a grammar ambiguous enough to pass it is refused at run time
// rather than allowed to take memory and time without limit.
constexpr size_t kMaxLiveStacks = 4096;

// What happened besides the stacks that live on.
struct StepEnds {
    bool accepted = false;        // a stack popped kBottom: the text so far is complete
    bool reached_caller = false;  // a stack popped kUnknownCaller
};

class Pushdown {
public:
    explicit Pushdown(std::shared_ptr<const Points> points);

    const Points &points() const { return *points_; }

    // The frame with this point over `parent` (a frame id, kBottom or kUnknownCaller).
    uint32_t frame(uint32_t point, uint32_t parent);
    uint32_t point_of(uint32_t frame) const { return frames_[frame].point; }
    uint32_t parent_of(uint32_t frame) const { return frames_[frame].parent; }
    size_t frame_count() const { return frames_.size(); }

    // The stacks at the start of the text, each with a bytes point on top, sorted.
    void start(std::vector<uint32_t> &out, StepEnds &ends);
    // The stacks `stack` stands for once every rule call and finished alternative on top of it
    // is resolved (out sorted).
    void expand(uint32_t stack, std::vector<uint32_t> &out, StepEnds &ends);
    // The stacks after reading `byte` from the set `in` (out sorted; may alias nothing of in).
    void step(std::span<const uint32_t> in, uint8_t byte, std::vector<uint32_t> &out, StepEnds &ends);

private:
    struct Frame {
        uint32_t point;
        uint32_t parent;
    };
    void close(std::vector<uint32_t> &out, StepEnds &ends);

    std::shared_ptr<const Points> points_;
    std::vector<Frame> frames_;
    // (point, parent) -> frame id: open addressing with linear probing, slots holding id + 1
    // (0 = empty). The hottest lookup of mask computation, where std::unordered_map's node per
    // entry cost a cache miss each.
    std::vector<uint32_t> slots_;
    std::vector<uint32_t> work_;                     // frames still to resolve
    std::vector<uint32_t> seen_;                     // per frame, the pass that last met it
    uint32_t pass_ = 0;
};

}  // namespace pagoda::grammar
