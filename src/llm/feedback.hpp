#pragma once

#include <cstddef>
#include <string>

#include "core/verdict.hpp"
#include "llm/extract.hpp"

namespace kbench::llm {

// The most characters a feedback text holds, whatever the verdict carries.
constexpr std::size_t kFeedbackLimit = 12000;

// What the evaluation of a candidate found, in words for the model's next turn: the status and
// reason; for failures to build, load or run, the tail of the program's output; for incorrect
// programs the trials and differences; integrity findings; for timed programs the times, the
// speedup with its 95% interval, the floor and the kernel table.
std::string feedback_text(const Verdict& verdict);

// Why no program was evaluated (the extraction failed), or the notes on how the program was taken
// from the answer (empty when there are none).
std::string extraction_feedback(const Extraction& extraction);

}  // namespace kbench::llm
