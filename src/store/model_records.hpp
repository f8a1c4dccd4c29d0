#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.hpp"

namespace kbench::store {

using json = nlohmann::json;

// One request to a language model and what came back: the request body, the raw response and
// the answer, never the credentials.
struct ModelCall {
    std::string key;  // the cache key (llm::ModelClient::cache_key)
    int level = 0;
    int problem_id = 0;
    int sample_id = 0;
    int turn = 0;
    std::string provider;
    std::string model;
    std::string status;  // "ok", "error" or "over_budget"
    std::string error;
    json answer;  // text, reasoning, finish_reason, tokens (llm::ChatAnswer::to_json)
    std::optional<double> cost_usd;
    json record;  // url, request, raw response, attempts, seconds
    std::string stored_at;
};

// One turn of a problem's sample: the candidate a model's answer gave (or why none) and, in a
// refinement, the verdict it got.
struct TurnRecord {
    int level = 0;
    int problem_id = 0;
    int sample_id = 0;
    int turn = 0;
    std::string call_key;
    std::string candidate_path;  // empty: nothing could be extracted
    std::string candidate_sha256;
    std::string extraction_error;
    std::string verdict_key;  // empty: not evaluated
    std::string status;       // the verdict's status
    std::optional<double> speedup;
};

// The language-model side of a run, in the run's database (kbench.db) beside its verdicts.
// Every put is durable when it returns; safe for several threads.
class ModelRecords {
  public:
    explicit ModelRecords(const fs::path& path);
    ~ModelRecords();
    ModelRecords(const ModelRecords&) = delete;
    ModelRecords& operator=(const ModelRecords&) = delete;

    // Records that COMMAND ("generate", "refine") makes this run; UsageError when another one
    // made it (their turns would mix: generate would overwrite refine's best candidates).
    void claim(const std::string& command, const fs::path& run_dir);

    void put_call(const ModelCall& call);
    // The latest answered call with this key (the response cache).
    std::optional<ModelCall> answered(const std::string& key);
    std::vector<ModelCall> calls();

    void put_turn(const TurnRecord& turn);  // insert, or replace the same sample's turn
    std::vector<TurnRecord> turns();        // by level, problem, sample, turn

  private:
    struct Database;
    std::unique_ptr<Database> db_;
};

}  // namespace kbench::store
