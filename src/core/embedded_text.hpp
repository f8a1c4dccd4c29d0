#pragma once

namespace kbench {

// A text file compiled into kbench (cmake/embed_text.cmake, its FILES form): its name (its path
// without the extension) and its text. A table of them ends with {nullptr, nullptr}; each user
// declares its own, extern in its namespace.
struct EmbeddedText {
    const char* name;
    const char* text;
};

}  // namespace kbench
