#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/files.hpp"
#include "dataset/problem.hpp"
#include "llm/client.hpp"
#include "llm/extract.hpp"
#include "llm/prompt.hpp"
#include "store/model_records.hpp"

namespace kbench::llm {

// How a run talks to its model: the templates, what goes into the first prompt, and the request
// every turn starts from (model, temperature, tokens, streaming).
struct GenerationSettings {
    std::string prompt_template;  // a first prompt's template (prompts/<backend>.md or the user's)
    std::string refine_template;  // the feedback message's (prompts/refine.md or the user's)
    std::string system;           // empty: no system message
    std::string hardware;         // a description (prompt.hpp), or empty
    std::vector<ExamplePair> few_shot;
    ChatRequest request;  // its messages are ignored
};

// The first turn's messages for a problem.
std::vector<Message> first_messages(const GenerationSettings& settings,
                                    const dataset::Problem& problem, Backend backend);

// What one turn of one sample gave.
struct TurnResult {
    Exchange exchange;
    Extraction extraction;
    fs::path candidate_path;  // written when extraction found code
    std::string candidate_sha256;
    std::vector<Message> conversation;  // the messages sent, and the answer after them
};

// Asks the model for one turn of a problem's sample and keeps everything that came back: the
// request and raw response in the run's records (ModelRecords), the candidate in its file.
class Generator {
  public:
    Generator(ModelClient& client, store::ModelRecords& records, GenerationSettings settings);

    // The first turn's messages for a problem.
    std::vector<Message> first_messages(const dataset::Problem& problem, Backend backend) const;
    // The conversation with the evaluation's feedback on turn `turn` (0-based) appended.
    std::vector<Message> with_feedback(std::vector<Message> conversation, int turn,
                                       const std::string& feedback) const;

    // The cache key the conversation would be asked under for this sample.
    std::string cache_key(const std::vector<Message>& conversation, int sample) const;

    // Sends the conversation (answered from the run's records when it was sent before), records
    // the call, extracts the candidate and writes it to `candidate_path`.
    TurnResult ask(const dataset::Problem& problem, int sample, int turn,
                   std::vector<Message> conversation, const fs::path& candidate_path);

  private:
    ChatRequest request_for(const std::vector<Message>& conversation) const;

    ModelClient& client_;
    store::ModelRecords& records_;
    GenerationSettings settings_;
};

// The run's record of a turn: the call it came from and the candidate (or why there is none).
store::TurnRecord turn_record(const dataset::Problem& problem, int sample, int turn,
                              const TurnResult& result);

// KernelBench's name of a sample's candidate in a run folder, and kbench's for one turn of it.
std::string candidate_file_name(int level, int problem, int sample);
std::string turn_file_name(int level, int problem, int sample, int turn);

// "level 1 problem 3 sample 0" (turn N when given).
std::string sample_label(int level, int problem, int sample, std::optional<int> turn = {});

}  // namespace kbench::llm
