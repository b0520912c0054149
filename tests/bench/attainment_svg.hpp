// SLO attainment against request rate, simulated and measured on one chart, as a plain SVG
// (AlpaServe's Fig. 5 shape), written by the placement benchmark.
#pragma once

#include <string>
#include <vector>

namespace pagoda::bench {

struct AttainmentPoint {
    double rate = 0.0;        // requests per second per model
    double simulated = 0.0;   // SLO attainment, 0..1
    double measured = 0.0;
};

// A standalone SVG document: axes (rate; attainment in %), a line with markers per series, a
// legend, `title` above (escaped).
std::string attainment_svg(const std::string &title, const std::vector<AttainmentPoint> &points);

}  // namespace pagoda::bench
