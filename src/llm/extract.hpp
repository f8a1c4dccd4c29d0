#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kbench::llm {

// The candidate program taken from a model's answer, or why there is none. error and notes are
// written for the model too: the refinement loop sends them back with the next turn.
struct Extraction {
    std::optional<std::string> code;  // the program, ending with a line break; none on error
    std::string error;                // what could not be extracted and what to do
    std::vector<std::string> notes;   // what was left out or guessed on the way
};

// Reasoning (<think>...</think>, <thinking>, <reasoning>) outside code is removed first; a closing
// tag without an opening one ends reasoning that began the answer when a program follows it, and
// goes alone otherwise. Then, from the fenced code blocks (``` or ~~~, any info string, indented by
// any amount, which the code loses; a fence inside a triple-quoted string is the string's unless
// no later fence closes the block): the last block that defines class ModelNew (every other block,
// such as a ```cpp block of kernel source, is left out with a note); a last block without its
// closing fence is taken as it is, with a note that the answer may have been cut off. Without any
// fence: the Python code around class ModelNew, from the first line of code after the last line of
// prose before it, without the prose after the code.
Extraction extract_candidate(const std::string& answer);

}  // namespace kbench::llm
