// How a chat template fails. Every failure is a ChatTemplateError (a pagoda::Error, so the C ABI
// guard maps it to its status); kind() tells a caller such as the HTTP server what went wrong:
// the template called raise_exception() (the request's messages break its rules: answer 400 with
// template_message()), the template is malformed or uses Jinja this renderer lacks, or rendering
// failed on these messages (a type error such as "str" + list).
#pragma once

#include <string>

#include "common/error.hpp"

namespace pagoda::tok {

enum class ChatTemplateErrorKind {
    Syntax,       // malformed Jinja (PAGODA_ERR_FORMAT)
    Unsupported,  // a tag, filter, test, method or operator outside the subset (PAGODA_ERR_UNSUPPORTED)
    Render,       // a runtime error on these inputs, as Python would raise (PAGODA_ERR_INVALID_ARGUMENT)
    Raised,       // the template called raise_exception(message) (PAGODA_ERR_INVALID_ARGUMENT)
    Limit,        // the render ran past its work or size limits (PAGODA_ERR_INVALID_ARGUMENT)
    NoTemplate,   // the model carries no chat template (PAGODA_ERR_UNSUPPORTED)
    Input,        // malformed messages/tools JSON (PAGODA_ERR_INVALID_ARGUMENT)
};

class ChatTemplateError : public Error {
public:
    // `detail` is the sentence without position; `line` 0 when unknown.
    ChatTemplateError(ChatTemplateErrorKind kind, std::string detail, int line = 0)
        : Error(status_of(kind), compose(kind, detail, line)), kind_(kind), detail_(std::move(detail)), line_(line) {}

    ChatTemplateErrorKind kind() const noexcept { return kind_; }
    // For Raised: exactly the message the template passed to raise_exception(); else the
    // sentence without the "chat template:" prefix and position.
    const std::string &template_message() const noexcept { return detail_; }
    int line() const noexcept { return line_; }
    // The same error placed at `line` (used where the position becomes known).
    ChatTemplateError at_line(int line) const { return ChatTemplateError(kind_, detail_, line); }

private:
    static pagoda_status_t status_of(ChatTemplateErrorKind kind) {
        switch (kind) {
        case ChatTemplateErrorKind::Syntax: return PAGODA_ERR_FORMAT;
        case ChatTemplateErrorKind::Unsupported:
        case ChatTemplateErrorKind::NoTemplate: return PAGODA_ERR_UNSUPPORTED;
        default: return PAGODA_ERR_INVALID_ARGUMENT;
        }
    }
    static std::string compose(ChatTemplateErrorKind kind, const std::string &detail, int line) {
        std::string where = line > 0 ? " at line " + std::to_string(line) : "";
        if (kind == ChatTemplateErrorKind::Raised) return "chat template raised an exception" + where + ": " + detail;
        if (kind == ChatTemplateErrorKind::NoTemplate || kind == ChatTemplateErrorKind::Input) return detail;
        if (kind == ChatTemplateErrorKind::Unsupported) return "chat template: unsupported " + detail + where;
        return "chat template: " + detail + where;
    }

    ChatTemplateErrorKind kind_;
    std::string detail_;
    int line_;
};

namespace jinja {

[[noreturn]] inline void syntax_error(const std::string &detail, int line) {
    throw ChatTemplateError(ChatTemplateErrorKind::Syntax, detail, line);
}
[[noreturn]] inline void unsupported(const std::string &detail, int line = 0) {
    throw ChatTemplateError(ChatTemplateErrorKind::Unsupported, detail, line);
}
[[noreturn]] inline void render_error(const std::string &detail, int line = 0) {
    throw ChatTemplateError(ChatTemplateErrorKind::Render, detail, line);
}

}  // namespace jinja

}  // namespace pagoda::tok
