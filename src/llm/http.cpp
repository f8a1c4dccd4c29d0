#include "llm/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <mutex>

namespace kbench::llm {
namespace {

struct Transfer {
    const HttpRequest* request;
    HttpResponse* response;
    bool too_large = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::size_t n = size * count;
    if (t->response->body.size() + n > t->request->max_bytes) {
        t->too_large = true;
        return 0;  // aborts the transfer
    }
    t->response->body.append(data, n);
    if (t->request->on_data) t->request->on_data(std::string_view(data, n));
    return n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0)
        t->response->headers.clear();  // a new response (redirect, 100)
    auto colon = line.find(':');
    if (colon == std::string::npos) return size * count;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    auto first = value.find_first_not_of(" \t");
    auto last = value.find_last_not_of(" \t\r\n");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    t->response->headers[name] = value;
    return size * count;
}

HttpFailure failure_of(CURLcode code) {
    switch (code) {
        case CURLE_OK:
            return HttpFailure::none;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
            return HttpFailure::connect;
        case CURLE_OPERATION_TIMEDOUT:
            return HttpFailure::timeout;
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            return HttpFailure::dropped;
        default:
            return HttpFailure::other;
    }
}

}  // namespace

bool http_available() {
    return true;
}

namespace {

HttpResponse perform(const HttpRequest& request, bool post) {
    static std::once_flag initialised;
    std::call_once(initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    HttpResponse response;
    CURL* curl = curl_easy_init();
    if (!curl) {
        response.failure = HttpFailure::other;
        response.error = "the HTTP client could not start (out of memory)";
        return response;
    }
    Transfer transfer{&request, &response};
    curl_slist* headers = nullptr;
    for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    // No "Expect: 100-continue" round trip for large prompts.
    headers = curl_slist_append(headers, "Expect:");
    char error[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    if (post) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
    } else {
        // A download follows redirections (a file host sends it on to its CDN), over HTTP(S).
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    // 0 would mean no limit at all.
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, std::max(1L, long(request.timeout_s * 1000)));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     std::max(1L, long(request.connect_timeout_s * 1000)));
    // Idle limit: under one byte a second for idle_timeout_s.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(request.idle_timeout_s)));
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever the library decodes
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "kbench");

    auto start = std::chrono::steady_clock::now();
    CURLcode code = curl_easy_perform(curl);
    response.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = int(status);
    if (transfer.too_large) {
        response.failure = HttpFailure::too_large;
        response.error = "the response passed " + std::to_string(request.max_bytes) + " bytes";
    } else if (code != CURLE_OK) {
        response.failure = failure_of(code);
        response.error = error[0] ? std::string(error) : std::string(curl_easy_strerror(code));
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return response;
}

}  // namespace

HttpResponse http_post(const HttpRequest& request) {
    return perform(request, true);
}

HttpResponse http_get(const HttpRequest& request) {
    return perform(request, false);
}

double retry_after_seconds(const std::map<std::string, std::string>& headers) {
    auto it = headers.find("retry-after");
    if (it == headers.end() || it->second.empty()) return -1;
    const std::string& value = it->second;
    if (std::all_of(value.begin(), value.end(),
                    [](unsigned char c) { return std::isdigit(c) || c == '.'; })) {
        try {
            return std::stod(value);
        } catch (...) {
            return -1;
        }
    }
    std::time_t when = curl_getdate(value.c_str(), nullptr);
    if (when < 0) return -1;
    return std::max(0.0, double(when - std::time(nullptr)));
}

}  // namespace kbench::llm
