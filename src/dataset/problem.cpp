#include "dataset/problem.hpp"

#include "core/sha256.hpp"

namespace kbench::dataset {

std::string Problem::label() const {
    return "level " + std::to_string(level) + " problem " + std::to_string(id) + " (" + name + ")";
}

Problem make_problem(int level, int id, std::string name, std::string code, std::string source) {
    Problem p;
    p.level = level;
    p.id = id;
    p.name = std::move(name);
    p.sha256 = sha256_hex(code);
    p.code = std::move(code);
    p.source = std::move(source);
    return p;
}

Candidate make_candidate(int level, int problem_id, int sample_id, std::string code,
                         std::string source) {
    Candidate c;
    c.level = level;
    c.problem_id = problem_id;
    c.sample_id = sample_id;
    c.sha256 = sha256_hex(code);
    c.code = std::move(code);
    c.source = std::move(source);
    return c;
}

}  // namespace kbench::dataset
