#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kbench::llm {

// One HTTP request: where, what (a POST's body), and how long kbench waits for it.
struct HttpRequest {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string body;
    double timeout_s = 600;         // the whole exchange
    double idle_timeout_s = 120;    // no byte received for this long
    double connect_timeout_s = 30;  // connecting
    std::size_t max_bytes = 16u << 20;
    // Each piece of the body as it arrives (streaming); the body is also kept whole.
    std::function<void(std::string_view)> on_data;
};

// Why no complete response came back.
enum class HttpFailure {
    none,
    connect,    // no connection (refused, DNS, TLS)
    timeout,    // the whole or idle limit passed
    dropped,    // the server closed the connection before a complete response
    too_large,  // the body passed max_bytes
    other,
};

struct HttpResponse {
    int status = 0;                              // 0: no status line came
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    HttpFailure failure = HttpFailure::none;
    std::string error;  // what the transfer reported, when it failed
    double seconds = 0;
};

// Whether this kbench was built with an HTTP client (libcurl).
bool http_available();

// Sends the request and waits for the whole response, or its failure. Never throws for what the
// network or the server did; throws UsageError when kbench has no HTTP client.
HttpResponse http_post(const HttpRequest& request);
// The same for a GET (the body is not sent), following redirections.
HttpResponse http_get(const HttpRequest& request);

// The seconds a Retry-After header asks for (a number, or an HTTP date); negative when absent or
// unreadable.
double retry_after_seconds(const std::map<std::string, std::string>& headers);

}  // namespace kbench::llm
