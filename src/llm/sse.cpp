#include "llm/sse.hpp"

namespace kbench::llm {

std::vector<SseEvent> SseParser::feed(std::string_view piece) {
    std::vector<SseEvent> out;
    for (char c : piece) {
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') continue;  // the \n of a \r\n
        }
        if (c == '\r' || c == '\n') {
            after_cr_ = c == '\r';
            line(pending_, out);
            pending_.clear();
        } else {
            pending_ += c;
        }
    }
    return out;
}

std::vector<SseEvent> SseParser::finish() {
    std::vector<SseEvent> out;
    if (!pending_.empty()) line(pending_, out);
    pending_.clear();
    dispatch(out);
    return out;
}

void SseParser::line(std::string_view text, std::vector<SseEvent>& out) {
    if (text.empty()) {
        dispatch(out);
        return;
    }
    if (text.front() == ':') return;  // a comment (keep-alive)
    auto colon = text.find(':');
    std::string_view field = text.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
        if (has_data_) event_.data += '\n';
        event_.data += value;
        has_data_ = true;
    } else if (field == "event") {
        event_.event = value;
    }
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
    if (has_data_) out.push_back(event_);
    event_ = {};
    has_data_ = false;
}

}  // namespace kbench::llm
