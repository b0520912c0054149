// Rewriting a regex tree so that no repetition repeats a nullable item (the GBNF matcher steps
// top-down and would loop on one), and the estimate of the grammar the tree becomes.
#include "grammar/regex_nullable.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace pagoda::grammar::regex {
namespace {

bool nullable(const Node &n) {
    switch (n.kind) {
    case Node::Kind::empty: return true;
    case Node::Kind::chars: return false;
    case Node::Kind::seq:
        return std::all_of(n.children.begin(), n.children.end(), nullable);
    case Node::Kind::alt:
        return std::any_of(n.children.begin(), n.children.end(), nullable);
    case Node::Kind::repeat: return n.min == 0 || nullable(n.children[0]);
    }
    return true;
}

size_t node_count(const Node &n) {
    size_t count = 1;
    for (const Node &c : n.children) count += node_count(c);
    return count;
}

// Spelling out a nullable sequence copies its tail once per item: `budget` bounds the copies.
void charge(size_t &budget, size_t nodes) {
    if (nodes > budget)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "regex: the pattern is too large once its repeated optional items are spelled "
                    "out");
    budget -= nodes;
}

// The same language less the empty text; absent when nothing is left. Repeating a nullable item
// would give the top-down matcher a loop that consumes nothing (the GBNF parser refuses it as
// left recursion), so repeated items go through this first.
std::optional<Node> non_empty(const Node &n, size_t &budget) {
    switch (n.kind) {
    case Node::Kind::empty: return std::nullopt;
    case Node::Kind::chars: return n;
    case Node::Kind::seq: {
        if (!nullable(n)) return n;
        // Every item is nullable: the first non-empty item, then anything of the rest.
        std::vector<size_t> tail_nodes(n.children.size() + 1, 0);
        for (size_t i = n.children.size(); i-- > 0;)
            tail_nodes[i] = tail_nodes[i + 1] + node_count(n.children[i]);
        Node alt = Node::of(Node::Kind::alt);
        for (size_t i = 0; i < n.children.size(); ++i) {
            charge(budget, tail_nodes[i]);
            std::optional<Node> head = non_empty(n.children[i], budget);
            if (!head) continue;
            Node seq = Node::of(Node::Kind::seq);
            seq.children.push_back(std::move(*head));
            seq.children.insert(seq.children.end(), n.children.begin() + long(i) + 1,
                                n.children.end());
            alt.children.push_back(std::move(seq));
        }
        if (alt.children.empty()) return std::nullopt;
        return alt;
    }
    case Node::Kind::alt: {
        Node alt = Node::of(Node::Kind::alt);
        for (const Node &c : n.children)
            if (std::optional<Node> ne = non_empty(c, budget))
                alt.children.push_back(std::move(*ne));
        if (alt.children.empty()) return std::nullopt;
        return alt;
    }
    case Node::Kind::repeat: {
        if (n.max && *n.max == 0) return std::nullopt;
        Node rep = n;
        if (nullable(n.children[0])) {
            std::optional<Node> item = non_empty(n.children[0], budget);
            if (!item) return std::nullopt;
            rep.children[0] = std::move(*item);
        }
        rep.min = std::max<uint32_t>(rep.min, 1);
        if (rep.max && *rep.max < rep.min) rep.min = *rep.max;
        return rep;
    }
    }
    return std::nullopt;
}

}  // namespace

Node without_nullable_repeats(const Node &n, size_t &budget) {
    Node out = n;
    for (Node &c : out.children) c = without_nullable_repeats(c, budget);
    if (out.kind != Node::Kind::repeat) return out;
    if (out.max && *out.max == 0) return Node::of(Node::Kind::empty);
    if (!nullable(out.children[0])) return out;
    std::optional<Node> item = non_empty(out.children[0], budget);
    if (!item) return Node::of(Node::Kind::empty);
    out.children[0] = std::move(*item);
    out.min = 0;
    return out;
}

uint64_t grammar_cost(const Node &n) {
    switch (n.kind) {
    case Node::Kind::empty:
    case Node::Kind::chars: return 1;
    case Node::Kind::seq:
    case Node::Kind::alt: {
        uint64_t sum = 1;
        for (const Node &c : n.children) sum += grammar_cost(c);
        return sum;
    }
    case Node::Kind::repeat:
        return grammar_cost(n.children[0]) + 2 * uint64_t(n.max ? *n.max : n.min + 1) + 1;
    }
    return 1;
}

}  // namespace pagoda::grammar::regex
