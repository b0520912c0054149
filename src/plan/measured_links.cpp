#include "plan/measured_links.hpp"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "plan/json_field.hpp"

namespace pagoda::plan {

using nlohmann::json;

namespace {

constexpr LinkPath kPaths[] = {LinkPath::WithinProcess, LinkPath::WithinMachine, LinkPath::AcrossMachines};

json call_json(const LinkFit &fit, const std::vector<LinkSample> &samples) {
    json points = json::array();
    for (const LinkSample &s : samples) points.push_back({s.bytes, s.seconds});
    return {{"latency", fit.latency}, {"bandwidth", fit.bandwidth}, {"fit_error", fit.fit_error}, {"samples", points}};
}

void parse_call(const json &j, const std::string &where, LinkFit &fit, std::vector<LinkSample> &samples) {
    if (!j.is_object()) throw Error(PAGODA_ERR_FORMAT, where + " must be an object");
    fit = {field<double>(j, "latency", where), field<double>(j, "bandwidth", where),
           field<double>(j, "fit_error", where)};
    if (!j.contains("samples") || !j.at("samples").is_array())
        throw Error(PAGODA_ERR_FORMAT, where + ": \"samples\" must be an array");
    for (const json &point : j.at("samples")) {
        const std::string at = where + ".samples[" + std::to_string(samples.size()) + "]";
        if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number())
            throw Error(PAGODA_ERR_FORMAT, at + " must be [bytes, seconds]");
        samples.push_back({point[0].get<double>(), point[1].get<double>()});
    }
}

void check_fit(const LinkFit &fit, const char *call) {
    if (!(fit.latency >= 0) || !std::isfinite(fit.latency) || !(fit.bandwidth > 0) || !std::isfinite(fit.bandwidth) ||
        !(fit.fit_error >= 0) || !std::isfinite(fit.fit_error))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string("measured link: the ") + call +
                                                     " fit wants latency >= 0, bandwidth > 0 and fit_error >= 0, "
                                                     "all finite");
}

}  // namespace

const char *link_path_name(LinkPath path) {
    switch (path) {
    case LinkPath::WithinProcess: return "within_process";
    case LinkPath::WithinMachine: return "within_machine";
    case LinkPath::AcrossMachines: return "across_machines";
    }
    return "?";
}

LinkPath link_path_from_name(const std::string &name) {
    for (LinkPath p : kPaths)
        if (name == link_path_name(p)) return p;
    throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                "link path \"" + name + "\": want within_process, within_machine or across_machines");
}

LinkFit fit_link(const std::vector<LinkSample> &samples, double messages, double volume) {
    std::set<double> sizes;
    for (const LinkSample &s : samples) {
        if (!(s.bytes > 0) || !(s.seconds > 0) || !std::isfinite(s.bytes) || !std::isfinite(s.seconds))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "link fit: a sample of " + std::to_string(s.bytes) + " bytes in " +
                                                         std::to_string(s.seconds) + " s, want both positive");
        sizes.insert(s.bytes);
    }
    if (sizes.size() < 2) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "link fit: want samples of at least two sizes");
    // seconds ≈ a + b·bytes, each residual divided by its own seconds: rows (1/y, x/y) against 1.
    double s_uu = 0, s_ux = 0, s_xx = 0, s_u = 0, s_x = 0;
    for (const LinkSample &s : samples) {
        const double u = 1.0 / s.seconds, x = s.bytes * u;
        s_uu += u * u;
        s_ux += u * x;
        s_xx += x * x;
        s_u += u;
        s_x += x;
    }
    double a = (s_u * s_xx - s_x * s_ux) / (s_uu * s_xx - s_ux * s_ux);
    double b = (s_uu * s_x - s_ux * s_u) / (s_uu * s_xx - s_ux * s_ux);
    if (a < 0) {  // no negative latency: the best line through the origin
        a = 0;
        b = s_x / s_xx;
    }
    if (!(b > 0) || !std::isfinite(b))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "link fit: the times do not grow with the size from " +
                                                     std::to_string(int64_t(*sizes.begin())) + " to " +
                                                     std::to_string(int64_t(*sizes.rbegin())) +
                                                     " bytes (latency hides the bandwidth): time larger sizes");
    LinkFit fit{a / messages, volume / b, 0};
    for (const LinkSample &s : samples) fit.fit_error += std::abs(a + b * s.bytes - s.seconds) / s.seconds;
    fit.fit_error /= double(samples.size());
    return fit;
}

void fit_measured_link(MeasuredLink &link) {
    link.all_reduce = fit_link(link.all_reduce_samples, 2, 1);
    link.send = fit_link(link.send_samples, 1, 1);
}

void validate(const MeasuredLink &link) {
    if (link.backend.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured link: backend is empty");
    if (link.all_reduce_samples.size() < 2 || link.send_samples.size() < 2)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "measured link: want at least two samples of each call");
    check_fit(link.all_reduce, "all_reduce");
    check_fit(link.send, "send");
}

json measured_link_to_json(const MeasuredLink &link) {
    return {{"backend", link.backend},
            {"path", link_path_name(link.path)},
            {"between", link.between},
            {"transport", link.transport},
            {"all_reduce", call_json(link.all_reduce, link.all_reduce_samples)},
            {"send", call_json(link.send, link.send_samples)}};
}

std::string measured_links_json(const std::vector<MeasuredLink> &links) {
    json out = json::array();
    for (const MeasuredLink &l : links) out.push_back(measured_link_to_json(l));
    return out.dump();
}

MeasuredLink measured_link_from_json(const json &j, const std::string &where) {
    if (!j.is_object()) throw Error(PAGODA_ERR_FORMAT, where + " must be an object");
    MeasuredLink link;
    link.backend = field<std::string>(j, "backend", where);
    try {
        link.path = link_path_from_name(field<std::string>(j, "path", where));
    } catch (const Error &e) {
        throw Error(PAGODA_ERR_FORMAT, where + ": " + e.what());
    }
    link.between = field<std::string>(j, "between", where);
    link.transport = field<std::string>(j, "transport", where);
    for (const char *call : {"all_reduce", "send"})
        if (!j.contains(call)) throw Error(PAGODA_ERR_FORMAT, where + ": missing \"" + call + "\"");
    parse_call(j.at("all_reduce"), where + ".all_reduce", link.all_reduce, link.all_reduce_samples);
    parse_call(j.at("send"), where + ".send", link.send, link.send_samples);
    try {
        validate(link);
    } catch (const Error &e) {
        throw Error(PAGODA_ERR_FORMAT, where + ": " + e.what());
    }
    return link;
}

NodeLinks node_links(const std::vector<MeasuredLink> &links, const std::string &backend) {
    auto find = [&](LinkPath path) -> const MeasuredLink * {
        for (const MeasuredLink &l : links)
            if (l.backend == backend && l.path == path) return &l;
        return nullptr;
    };
    NodeLinks out;
    out.within_node = find(LinkPath::WithinMachine);
    if (out.within_node == nullptr) out.within_node = find(LinkPath::WithinProcess);
    out.across_nodes = find(LinkPath::AcrossMachines);
    return out;
}

}  // namespace pagoda::plan
