#include "llm/generator.hpp"

#include "core/sha256.hpp"

namespace kbench::llm {

std::string candidate_file_name(int level, int problem, int sample) {
    return "level_" + std::to_string(level) + "_problem_" + std::to_string(problem) + "_sample_" +
           std::to_string(sample) + "_kernel.py";
}

std::string turn_file_name(int level, int problem, int sample, int turn) {
    return "level_" + std::to_string(level) + "_problem_" + std::to_string(problem) + "_sample_" +
           std::to_string(sample) + "_turn_" + std::to_string(turn) + "_kernel.py";
}

store::TurnRecord turn_record(const dataset::Problem& problem, int sample, int turn,
                              const TurnResult& result) {
    store::TurnRecord record{problem.level, problem.id, sample, turn, result.exchange.key};
    record.candidate_path = result.candidate_path.string();
    record.candidate_sha256 = result.candidate_sha256;
    record.extraction_error = result.extraction.error;
    return record;
}

std::string sample_label(int level, int problem, int sample, std::optional<int> turn) {
    std::string label = "level " + std::to_string(level) + " problem " + std::to_string(problem) +
                        " sample " + std::to_string(sample);
    if (turn) label += " turn " + std::to_string(*turn);
    return label;
}

Generator::Generator(ModelClient& client, store::ModelRecords& records, GenerationSettings settings)
    : client_(client), records_(records), settings_(std::move(settings)) {}

std::vector<Message> first_messages(const GenerationSettings& settings,
                                    const dataset::Problem& problem, Backend backend) {
    PromptInputs inputs;
    inputs.backend = backend;
    inputs.problem_name = problem.name;
    inputs.reference = problem.code;
    inputs.hardware = settings.hardware;
    inputs.few_shot = settings.few_shot;
    return {{"user", render_prompt(settings.prompt_template, inputs)}};
}

std::vector<Message> Generator::first_messages(const dataset::Problem& problem,
                                               Backend backend) const {
    return llm::first_messages(settings_, problem, backend);
}

std::vector<Message> Generator::with_feedback(std::vector<Message> conversation, int turn,
                                              const std::string& feedback) const {
    conversation.push_back({"user", render_refine(settings_.refine_template, turn + 1, feedback)});
    return conversation;
}

ChatRequest Generator::request_for(const std::vector<Message>& conversation) const {
    ChatRequest request = settings_.request;
    request.system = settings_.system;
    request.messages = conversation;
    return request;
}

// The sample number keeps samples of one prompt apart in the cache.
static std::string salt(int sample) {
    return "sample " + std::to_string(sample);
}

// A URL as kept in the run: without the user and password it may carry.
static std::string without_userinfo(const std::string& url) {
    auto scheme = url.find("://");
    auto at = url.find('@', scheme == std::string::npos ? 0 : scheme + 3);
    auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    if (scheme == std::string::npos || at == std::string::npos ||
        (path != std::string::npos && at > path))
        return url;
    return url.substr(0, scheme + 3) + url.substr(at + 1);
}

std::string Generator::cache_key(const std::vector<Message>& conversation, int sample) const {
    return client_.cache_key(request_for(conversation), salt(sample));
}

TurnResult Generator::ask(const dataset::Problem& problem, int sample, int turn,
                          std::vector<Message> conversation, const fs::path& candidate_path) {
    ChatRequest request = request_for(conversation);
    TurnResult result;
    std::string label = sample_label(problem.level, problem.id, sample, turn);
    result.exchange = client_.ask(request, salt(sample), label);
    const Exchange& e = result.exchange;
    if (!e.cached && !e.over_budget) {
        store::ModelCall call;
        call.key = e.key;
        call.level = problem.level;
        call.problem_id = problem.id;
        call.sample_id = sample;
        call.turn = turn;
        call.provider = client_.provider().name;
        call.model = request.model;
        call.status = e.ok ? "ok" : "error";
        call.error = e.error;
        call.answer = e.answer.to_json();
        call.cost_usd = e.cost_usd;
        call.record = {
            {"url", without_userinfo(e.url)}, {"request", e.request},    {"response", e.raw},
            {"attempts", e.attempts},         {"tries", e.attempts_log}, {"seconds", e.seconds}};
        records_.put_call(call);
    }
    result.conversation = conversation;
    if (!e.ok) return result;
    result.conversation.push_back({"assistant", e.answer.text});
    result.extraction = extract_candidate(e.answer.text);
    if (!result.extraction.code) return result;
    fs::create_directories(candidate_path.parent_path());
    write_file_atomic(candidate_path, *result.extraction.code);
    result.candidate_path = candidate_path;
    result.candidate_sha256 = sha256_hex(*result.extraction.code);
    return result;
}

}  // namespace kbench::llm
