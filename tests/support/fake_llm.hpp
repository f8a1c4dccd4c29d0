#pragma once

// The scripted language-model server (tests/llm/fake_llm_server.py) on loopback, for a test's
// lifetime: started with a script, its port read, its request log readable, stopped at the end.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbench::test {

class FakeLlmServer {
  public:
    // script: {"rules": [...]} (tests/llm/README.md); dir: where the script and log are kept.
    FakeLlmServer(const nlohmann::json& script, const std::filesystem::path& dir) : dir_(dir) {
        // Loopback requests never go through a proxy the environment names.
        ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
        ::setenv("no_proxy", "127.0.0.1,localhost", 1);
        std::filesystem::create_directories(dir_);
        std::ofstream(dir_ / "script.json") << script.dump();
        int out[2];
        if (::pipe(out) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            ::close(out[1]);
            std::string server = std::string(KBENCH_SOURCE_DIR) + "/tests/llm/fake_llm_server.py";
            std::string script_path = (dir_ / "script.json").string();
            std::string log_path = log().string();
            ::execlp(KBENCH_TEST_PYTHON, KBENCH_TEST_PYTHON, server.c_str(), "--script",
                     script_path.c_str(), "--log", log_path.c_str(), "--port", "0", nullptr);
            ::_exit(127);
        }
        ::close(out[1]);
        FILE* from = ::fdopen(out[0], "r");
        char line[128] = {0};
        if (!std::fgets(line, sizeof(line), from) || std::sscanf(line, "PORT %d", &port_) != 1)
            throw std::runtime_error("the fake model server did not start");
        std::fclose(from);
    }
    ~FakeLlmServer() {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
    }
    FakeLlmServer(const FakeLlmServer&) = delete;
    FakeLlmServer& operator=(const FakeLlmServer&) = delete;

    int port() const { return port_; }
    std::string url(const std::string& prefix = "/v1") const {
        return "http://127.0.0.1:" + std::to_string(port_) + prefix;
    }
    std::filesystem::path log() const { return dir_ / "requests.jsonl"; }
    // Every request the server received, in order.
    std::vector<nlohmann::json> requests() const {
        std::vector<nlohmann::json> out;
        std::ifstream in(log());
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(nlohmann::json::parse(line));
        return out;
    }

  private:
    std::filesystem::path dir_;
    pid_t pid_ = -1;
    int port_ = 0;
};

}  // namespace kbench::test
