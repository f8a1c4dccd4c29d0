#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kbench::llm {

// One server-sent event: its type (empty: "message") and its data lines joined by '\n'.
struct SseEvent {
    std::string event;
    std::string data;
};

// Reads a text/event-stream in whatever pieces the network delivers: lines end in \n, \r\n or
// \r; comments (":") and unknown fields are ignored; an event ends at a blank line.
class SseParser {
  public:
    // The events the piece completes.
    std::vector<SseEvent> feed(std::string_view piece);
    // An event left without its blank line when the stream ended (some servers omit it).
    std::vector<SseEvent> finish();

  private:
    void line(std::string_view text, std::vector<SseEvent>& out);
    void dispatch(std::vector<SseEvent>& out);

    std::string pending_;  // an unfinished line
    bool after_cr_ = false;
    SseEvent event_;
    bool has_data_ = false;
};

}  // namespace kbench::llm
