#include "server/chat_prompt.hpp"

#include "server/api_error.hpp"
#include "server/served_model.hpp"

namespace pagoda::server {

std::string render_chat_prompt(const ServedModel &model, const nlohmann::json &, bool) {
    // TODO(chat-template): render with the model's chat template once the renderer lands.
    throw ApiError(501,
                   "chat templates not available yet: this build cannot render messages for model '" +
                       model.name + "'; use /v1/completions with a prompt",
                   "messages", "chat_template_unavailable");
}

}  // namespace pagoda::server
