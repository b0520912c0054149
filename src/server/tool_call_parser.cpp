#include "server/tool_call_parser.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace pagoda::server {

namespace {

using ojson = nlohmann::ordered_json;

// Deeper calls are not read (the JSON copies and writers below recurse once per level).
constexpr int kMaxNesting = 128;

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t skip_space(std::string_view t, size_t p) {
    while (p < t.size() && is_space(t[p])) ++p;
    return p;
}

size_t trim_end(std::string_view t, size_t end) {
    while (end > 0 && is_space(t[end - 1])) --end;
    return end;
}

bool starts(std::string_view t, size_t p, std::string_view s) {
    return !s.empty() && t.substr(p).starts_with(s);
}

// The text from `p` is a non-empty proper beginning of `s`: more text could complete it.
bool partial(std::string_view t, size_t p, std::string_view s) {
    const std::string_view r = t.substr(p);
    return !r.empty() && r.size() < s.size() && s.starts_with(r);
}

enum class Step { done, more, bad };

// Where the JSON object at `p` ends: brackets counted outside strings (parsing checks the rest).
Step object_end(std::string_view t, size_t p, size_t &end) {
    if (p >= t.size()) return Step::more;
    if (t[p] != '{') return Step::bad;
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = p; i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > kMaxNesting) return Step::bad;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                end = i + 1;
                return Step::done;
            }
        }
    }
    return Step::more;
}

// json.dumps's layout, which vLLM's arguments strings have: ", " and ": " separators.
void write_python(const ojson &v, std::string &out) {
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (const auto &[key, value] : v.items()) {
            out += first ? "" : ", ";
            first = false;
            out += ojson(key).dump();
            out += ": ";
            write_python(value, out);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        for (size_t i = 0; i < v.size(); ++i) {
            out += i ? ", " : "";
            write_python(v[i], out);
        }
        out += ']';
    } else {
        out += v.dump(-1, ' ', false, ojson::error_handler_t::replace);
    }
}

bool read_call(std::string_view object, const ToolCallSyntax &syntax, ParsedToolCall &call) {
    const ojson j = ojson::parse(object, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return false;
    auto name = j.find("name");
    if (name == j.end() || !name->is_string()) return false;
    const std::string n = name->get<std::string>();
    if (syntax.names == nullptr ||
        std::find(syntax.names->begin(), syntax.names->end(), n) == syntax.names->end())
        return false;
    // Models trained on one family write the other's key now and then; vLLM reads both.
    const ojson *args = nullptr;
    for (const char *key : {"arguments", "parameters"})
        if (auto it = j.find(key); it != j.end() && args == nullptr) args = &*it;
    if (args != nullptr && !args->is_object()) return false;
    call.name = n;
    call.arguments.clear();
    if (args == nullptr)
        call.arguments = "{}";
    else
        write_python(*args, call.arguments);
    return true;
}

class Scanner {
public:
    Scanner(const ToolCallSyntax &syntax, std::string_view text, bool final)
        : syntax_(syntax), markers_(tool_call_markers(syntax.family)), text_(text), final_(final) {}

    ToolCallScan run() {
        if (syntax_.family == ToolCallFamily::none) return all_content();
        size_t at = 0;  // where the calls begin
        if (syntax_.forced) {
            at = skip_space(text_, 0);
        } else if (syntax_.family == ToolCallFamily::llama3_json) {
            // A call only as the whole answer: the first character decides.
            at = skip_space(text_, 0);
            const bool call =
                at < text_.size() && (text_[at] == '{' || starts(text_, at, markers_.start));
            if (!call) {
                const bool undecided =
                    !final_ && (at == text_.size() || partial(text_, at, markers_.start));
                return undecided ? r_ : all_content();
            }
        } else {
            const size_t found = text_.find(markers_.start);
            if (found == std::string_view::npos) {
                size_t end = text_.size();
                // Held back until decided: what may begin an opener and the space before it.
                for (size_t k = std::min(markers_.start.size() - 1, end); !final_ && k > 0; --k)
                    if (markers_.start.starts_with(text_.substr(end - k))) {
                        end -= k;
                        break;
                    }
                r_.content_end = final_ ? end : trim_end(text_, end);
                r_.rest = r_.content_end;
                return r_;
            }
            r_.content_end = trim_end(text_, found);
            at = found;
        }
        r_.rest = r_.content_end;
        switch (syntax_.family) {
        case ToolCallFamily::hermes: return hermes(at);
        case ToolCallFamily::mistral: return mistral(at);
        default: return llama(at);
        }
    }

private:
    ToolCallScan all_content() {
        r_.content_end = text_.size();
        r_.rest = text_.size();
        r_.rest_is_content = true;
        return r_;
    }
    // Reading stops at `q`: the text from there is content (all of it when no call counted).
    ToolCallScan fail(size_t q) {
        r_.rest = r_.calls.empty() ? r_.content_end : q;
        r_.rest_is_content = true;
        return r_;
    }
    // More text may complete what begins at `q`; a final text does not.
    ToolCallScan pending(size_t q) {
        if (final_) return fail(q);
        r_.rest = q;
        return r_;
    }
    // Text after the calls, from `q` (not space).
    ToolCallScan trailing(size_t q) {
        if (q == text_.size()) return pending(q);
        r_.rest = q;
        r_.rest_is_content = true;
        return r_;
    }
    // The call object at `p`; `end` is set past it.
    Step call_at(size_t p, size_t &end) {
        const Step s = object_end(text_, p, end);
        if (s != Step::done) return s;
        ParsedToolCall call;
        if (!read_call(text_.substr(p, end - p), syntax_, call)) return Step::bad;
        r_.calls.push_back(std::move(call));
        return Step::done;
    }

    ToolCallScan hermes(size_t p) {
        for (;;) {
            p = skip_space(text_, p);
            if (p == text_.size()) return pending(p);
            const size_t start = p;
            if (starts(text_, p, markers_.start)) {
                p += markers_.start.size();
            } else if (!final_ && partial(text_, p, markers_.start)) {
                return pending(start);
            } else if (!(syntax_.forced && text_[p] == '{')) {
                return r_.calls.empty() ? fail(start) : trailing(start);
            }
            p = skip_space(text_, p);
            size_t end = 0;
            // The call is taken only with its closer (or at the very end of a final text: the
            // model stopped after the object), so a stream never sends one it must take back.
            const size_t before = r_.calls.size();
            const Step s = call_at(p, end);
            if (s == Step::more) return pending(start);
            if (s == Step::bad) return fail(start);
            p = skip_space(text_, end);
            if (starts(text_, p, markers_.end)) {
                p += markers_.end.size();
            } else if (!final_ && (p == text_.size() || partial(text_, p, markers_.end))) {
                r_.calls.resize(before);
                return pending(start);
            } else if (p != text_.size() && !syntax_.forced) {
                r_.calls.resize(before);
                return fail(start);
            }
        }
    }

    ToolCallScan mistral(size_t p) {
        if (starts(text_, p, markers_.start))
            p += markers_.start.size();
        else if (!final_ && partial(text_, p, markers_.start))
            return pending(p);
        p = skip_space(text_, p);
        size_t end = 0;
        if (p < text_.size() && text_[p] == '{') {  // one call without the list
            const Step s = call_at(p, end);
            if (s != Step::done) return s == Step::more ? pending(p) : fail(p);
            return trailing(skip_space(text_, end));
        }
        if (p == text_.size()) return pending(p);
        if (text_[p] != '[') return fail(p);
        ++p;
        for (;;) {
            p = skip_space(text_, p);
            const Step s = call_at(p, end);
            if (s != Step::done) return s == Step::more ? pending(p) : fail(p);
            p = skip_space(text_, end);
            if (p == text_.size()) return pending(p);
            if (text_[p] == ']') return trailing(skip_space(text_, p + 1));
            if (text_[p] != ',') return fail(p);
            ++p;
        }
    }

    ToolCallScan llama(size_t p) {
        if (starts(text_, p, markers_.start))
            p += markers_.start.size();
        else if (!final_ && partial(text_, p, markers_.start))
            return pending(p);
        for (;;) {
            p = skip_space(text_, p);
            size_t end = 0;
            const Step s = call_at(p, end);
            if (s != Step::done) return s == Step::more ? pending(p) : fail(p);
            p = skip_space(text_, end);
            if (p == text_.size()) return pending(p);
            if (text_[p] != ';') return trailing(p);
            ++p;
        }
    }

    const ToolCallSyntax &syntax_;
    const ToolCallMarkers markers_;
    const std::string_view text_;
    const bool final_;
    ToolCallScan r_;
};

}  // namespace

ToolCallScan scan_tool_calls(const ToolCallSyntax &syntax, std::string_view text, bool final) {
    return Scanner(syntax, text, final).run();
}

}  // namespace pagoda::server
