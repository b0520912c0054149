#include "attainment_svg.hpp"

#include <algorithm>
#include <cstdio>

namespace pagoda::bench {

namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 70, kRight = 30, kTop = 50, kBottom = 60;

std::string escape(const std::string &text) {
    std::string out;
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

std::string attainment_svg(const std::string &title, const std::vector<AttainmentPoint> &points) {
    double max_rate = 0;
    for (const AttainmentPoint &p : points) max_rate = std::max(max_rate, p.rate);
    if (max_rate <= 0) max_rate = 1;
    const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
    auto x = [&](double rate) { return kLeft + plot_w * rate / max_rate; };
    auto y = [&](double share) { return kTop + plot_h * (1.0 - share); };

    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) +
                      "\" height=\"" + number(kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + number(kLeft) + "\" y=\"24\" font-size=\"14\" font-weight=\"bold\">" + escape(title) + "</text>\n";
    // Grid and axes: attainment every 20 %, rate at each measured point.
    for (int pct = 0; pct <= 100; pct += 20) {
        const std::string yy = number(y(pct / 100.0));
        svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + plot_w) + "\" y1=\"" + yy +
               "\" y2=\"" + yy + "\" stroke=\"#ddd\"/>\n";
        svg += "<text x=\"" + number(kLeft - 8) + "\" y=\"" + number(y(pct / 100.0) + 4) +
               "\" text-anchor=\"end\">" + std::to_string(pct) + "%</text>\n";
    }
    svg += "<text x=\"" + number(x(0)) + "\" y=\"" + number(kTop + plot_h + 18) + "\" text-anchor=\"middle\">0</text>\n";
    for (const AttainmentPoint &p : points)
        svg += "<text x=\"" + number(x(p.rate)) + "\" y=\"" + number(kTop + plot_h + 18) +
               "\" text-anchor=\"middle\">" + label(p.rate) + "</text>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft) + "\" y1=\"" + number(kTop) + "\" y2=\"" +
           number(kTop + plot_h) + "\" stroke=\"black\"/>\n";
    svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + plot_w) + "\" y1=\"" + number(kTop + plot_h) +
           "\" y2=\"" + number(kTop + plot_h) + "\" stroke=\"black\"/>\n";
    svg += "<text x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" + number(kHeight - 16) +
           "\" text-anchor=\"middle\">requests per second per model</text>\n";
    svg += "<text transform=\"translate(18," + number(kTop + plot_h / 2) +
           ") rotate(-90)\" text-anchor=\"middle\">SLO attainment</text>\n";

    struct Series {
        const char *name, *colour, *dash;
        double AttainmentPoint::*field;
    };
    const Series series[] = {{"simulated", "#1f77b4", "6,4", &AttainmentPoint::simulated},
                             {"measured", "#d62728", "", &AttainmentPoint::measured}};
    for (size_t k = 0; k < 2; ++k) {
        const Series &s = series[k];
        std::string path;
        for (const AttainmentPoint &p : points)
            path += (path.empty() ? "" : " ") + number(x(p.rate)) + "," + number(y(p.*s.field));
        svg += "<polyline fill=\"none\" stroke=\"" + std::string(s.colour) + "\" stroke-width=\"2\"" +
               (s.dash[0] ? " stroke-dasharray=\"" + std::string(s.dash) + "\"" : "") + " points=\"" + path + "\"/>\n";
        for (const AttainmentPoint &p : points)
            svg += "<circle cx=\"" + number(x(p.rate)) + "\" cy=\"" + number(y(p.*s.field)) + "\" r=\"4\" fill=\"" +
                   s.colour + "\"><title>" + s.name + " at " + label(p.rate) + "/s: " +
                   number(100.0 * (p.*s.field)) + "%</title></circle>\n";
        // The legend sits above the plot, clear of the points (which crowd the top at 100 %).
        const double lx = kLeft + plot_w - 230 + 120.0 * double(k), ly = kTop - 12;
        svg += "<line x1=\"" + number(lx) + "\" x2=\"" + number(lx + 30) + "\" y1=\"" + number(ly) + "\" y2=\"" +
               number(ly) + "\" stroke=\"" + s.colour + "\" stroke-width=\"2\"" +
               (s.dash[0] ? " stroke-dasharray=\"" + std::string(s.dash) + "\"" : "") + "/>\n";
        svg += "<text x=\"" + number(lx + 36) + "\" y=\"" + number(ly + 4) + "\">" + s.name + "</text>\n";
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace pagoda::bench
