// The HTTP client of a kbench built without libcurl: every request is refused with what to do.
#include <cctype>
#include <string>

#include "core/error.hpp"
#include "llm/http.hpp"

namespace kbench::llm {

bool http_available() {
    return false;
}

HttpResponse http_post(const HttpRequest&) {
    throw UsageError("this kbench was built without an HTTP client (libcurl was not found)",
                     "install libcurl's headers (Debian: apt install libcurl4-openssl-dev) and "
                     "build kbench again");
}

HttpResponse http_get(const HttpRequest& request) {
    return http_post(request);
}

double retry_after_seconds(const std::map<std::string, std::string>& headers) {
    auto it = headers.find("retry-after");
    if (it == headers.end()) return -1;
    try {
        return std::stod(it->second);
    } catch (...) {
        return -1;
    }
}

}  // namespace kbench::llm
