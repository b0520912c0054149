// matches_fully: the pushdown automaton run byte by byte over a whole text.
#include <memory>

#include "grammar/grammar.hpp"
#include "grammar/pushdown.hpp"

namespace pagoda::grammar {

bool matches_fully(const Grammar &grammar, std::string_view text) {
    Pushdown pushdown(std::make_shared<const Points>(grammar));
    std::vector<uint32_t> live, next;
    StepEnds ends;
    pushdown.start(live, ends);
    for (char c : text) {
        if (live.empty()) return false;
        ends = {};
        pushdown.step(live, static_cast<uint8_t>(c), next, ends);
        live.swap(next);
    }
    return ends.accepted;
}

}  // namespace pagoda::grammar
