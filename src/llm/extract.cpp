#include "llm/extract.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace kbench::llm {

namespace {

// A fenced code block: its language (the info string's first word, lower case), its lines.
struct Block {
    std::string language;
    std::string code;
    bool closed = false;
    std::size_t line = 0;  // the opening fence's, counted from 1
    std::size_t end = 0;   // the closing fence's index, or the number of lines
};

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c));
}
bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_blank(std::string_view text) {
    return std::all_of(text.begin(), text.end(), is_space);
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
        start = end + 1;
    }
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines, std::size_t first, std::size_t last) {
    std::string out;
    for (std::size_t i = first; i <= last && i < lines.size(); ++i) out += lines[i] + "\n";
    return out;
}

std::string list_in_words(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
        out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
    return out;
}

// ---- classes ----

// The class a line defines ("class Name(" or "class Name:"), or nothing.
std::optional<std::string> class_defined(std::string_view line) {
    line = trim(line);
    if (!line.starts_with("class") || line.size() < 6 || !is_space(line[5])) return std::nullopt;
    line = trim(line.substr(5));
    std::size_t n = 0;
    while (n < line.size() && is_name_char(line[n])) ++n;
    std::string_view after = trim(line.substr(n));
    if (n == 0 || after.empty() || (after.front() != '(' && after.front() != ':'))
        return std::nullopt;
    return std::string(line.substr(0, n));
}

std::vector<std::string> classes_in(const std::string& code) {
    std::vector<std::string> names;
    for (const auto& line : split_lines(code))
        if (auto name = class_defined(line);
            name && std::find(names.begin(), names.end(), *name) == names.end())
            names.push_back(*name);
    return names;
}

bool defines_model_new(const std::string& code) {
    auto names = classes_in(code);
    return std::find(names.begin(), names.end(), "ModelNew") != names.end();
}

// ---- Python strings ----

// The triple-quote delimiter open at a line's end, given the one open at its start (empty: none);
// kernel source and docstrings sit in such strings.
std::string string_open_after(std::string_view line, std::string open) {
    while (true) {
        std::size_t d = line.find("\"\"\""), s = line.find("'''");
        std::size_t at = open.empty() ? std::min(d, s) : open == "'''" ? s : d;
        if (at == std::string_view::npos) return open;
        open = !open.empty() ? "" : at == d ? "\"\"\"" : "'''";
        line.remove_prefix(at + 3);
    }
}

// Whether each line starts inside a triple-quoted string.
std::vector<bool> inside_strings(const std::vector<std::string>& lines) {
    std::vector<bool> inside(lines.size(), false);
    std::string open;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        inside[i] = !open.empty();
        open = string_open_after(lines[i], open);
    }
    return inside;
}

// ---- fences ----

struct Fence {
    char mark = 0;
    std::size_t length = 0;
    std::size_t indent = 0;
    std::string info;
};

// Any indentation is accepted: models indent fences inside list items by 4 spaces and more.
std::optional<Fence> fence_of(std::string_view line) {
    Fence f;
    while (f.indent < line.size() && line[f.indent] == ' ') ++f.indent;
    if (f.indent >= line.size()) return std::nullopt;
    f.mark = line[f.indent];
    if (f.mark != '`' && f.mark != '~') return std::nullopt;
    while (f.indent + f.length < line.size() && line[f.indent + f.length] == f.mark) ++f.length;
    if (f.length < 3) return std::nullopt;
    f.info = std::string(trim(line.substr(f.indent + f.length)));
    if (f.mark == '`' && f.info.find('`') != std::string::npos) return std::nullopt;
    return f;
}

bool closes(const Fence& open, std::string_view line) {
    auto f = fence_of(line);
    return f && f->mark == open.mark && f->length >= open.length && f->info.empty();
}

std::string language_of(const std::string& info) {
    std::string word = lower(info.substr(0, info.find_first_of(" \t")));
    word.erase(
        std::remove_if(word.begin(), word.end(), [](char c) { return c == '{' || c == '.'; }),
        word.end());
    return word;
}

// A content line without up to indent spaces.
std::string_view unindent(std::string_view line, std::size_t indent) {
    std::size_t n = 0;
    while (n < indent && n < line.size() && line[n] == ' ') ++n;
    return line.substr(n);
}

// The line that closes the block opened on line open_at, or lines.size(). A fence met inside a
// triple-quoted string is the string's (a docstring's example), unless no later fence closes.
std::size_t closing_line(const std::vector<std::string>& lines, std::size_t open_at,
                         const Fence& open) {
    std::optional<std::size_t> first;
    std::string quote;
    for (std::size_t i = open_at + 1; i < lines.size(); ++i) {
        if (closes(open, lines[i])) {
            if (quote.empty()) return i;
            if (!first) first = i;
        }
        quote = string_open_after(lines[i], quote);
    }
    return first.value_or(lines.size());
}

// Lines first..end-1 without the fence's indentation, then without any indentation they all still
// share, which Python would reject.
std::string block_code(const std::vector<std::string>& lines, std::size_t first, std::size_t end,
                       std::size_t indent) {
    std::vector<std::string_view> body;
    std::size_t common = std::string_view::npos;
    for (std::size_t i = first; i < end; ++i) {
        body.push_back(unindent(lines[i], indent));
        if (!is_blank(body.back())) common = std::min(common, body.back().find_first_not_of(' '));
    }
    std::string code;
    for (std::string_view line : body) code += std::string(unindent(line, common)) + "\n";
    return code;
}

std::vector<Block> fenced_blocks(const std::vector<std::string>& lines) {
    std::vector<Block> blocks;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        auto open = fence_of(lines[i]);
        if (!open) continue;
        std::size_t end = closing_line(lines, i, *open);
        blocks.push_back({language_of(open->info), block_code(lines, i + 1, end, open->indent),
                          end < lines.size(), i + 1, end});
        i = end;
    }
    return blocks;
}

// ---- reasoning ----

// Whether text holds a program: a fenced block defining ModelNew or, without fences, the class.
bool yields_program(const std::string& text) {
    auto lines = split_lines(text);
    auto blocks = fenced_blocks(lines);
    if (blocks.empty())
        return std::any_of(lines.begin(), lines.end(),
                           [](const std::string& l) { return class_defined(l) == "ModelNew"; });
    return std::any_of(blocks.begin(), blocks.end(),
                       [](const Block& b) { return defines_model_new(b.code); });
}

// The answer's lines, and for each whether it is inside a fenced block and, there, inside a
// triple-quoted string.
struct Answer {
    std::vector<std::string> lines;
    std::vector<bool> code, in_string;
};

Answer answer_of(const std::string& text) {
    Answer a{split_lines(text), {}, {}};
    a.code.assign(a.lines.size(), false);
    a.in_string.assign(a.lines.size(), false);
    for (const Block& block : fenced_blocks(a.lines)) {
        std::string quote;
        for (std::size_t i = block.line; i < block.end; ++i) {
            a.code[i] = true;
            a.in_string[i] = !quote.empty();
            quote = string_open_after(a.lines[i], quote);
        }
    }
    return a;
}

// In a block, only a tag inside a string or comment is program text: a bare one is reasoning that
// stray fences made look like code.
bool is_program_text(const Answer& a, std::size_t line, std::size_t at) {
    std::string_view before = std::string_view(a.lines[line]).substr(0, at);
    return a.code[line] &&
           (a.in_string[line] || before.find_first_of("\"'#") != std::string_view::npos ||
            before.find("//") != std::string_view::npos);
}

struct Tag {
    std::string name;  // think, thinking or reasoning
    bool closing = false;
    std::size_t at = 0, end = 0;  // columns in its line
};

// The first reasoning tag in a line from column col on; only name's closing tag when name is set.
std::optional<Tag> next_tag(const Answer& a, std::size_t line, std::size_t col,
                            const std::string& name) {
    const std::string low = lower(a.lines[line]);
    std::optional<Tag> first;
    for (std::string tag : {"think", "thinking", "reasoning"})
        for (bool closing : {false, true}) {
            if (!name.empty() && (tag != name || !closing)) continue;
            const std::string text = (closing ? "</" : "<") + tag + ">";
            std::size_t at = low.find(text, col);
            while (at != std::string::npos && is_program_text(a, line, at))
                at = low.find(text, at + 1);
            if (at != std::string::npos && (!first || at < first->at))
                first = Tag{tag, closing, at, at + text.size()};
        }
    return first;
}

// A stray closing tag ends reasoning whose opening tag was left out when a program follows it;
// otherwise (a tag after the program) only the tag goes.
std::string join_at_stray_tags(const std::vector<std::string>& parts) {
    std::string text = parts.back();
    for (std::size_t i = parts.size() - 1; i-- > 0 && !yields_program(text);)
        text = parts[i] + text;
    return text;
}

// The answer without its reasoning outside code; an opening tag never closed runs to the end.
std::string strip_reasoning(const std::string& answer, std::vector<std::string>& notes) {
    const Answer a = answer_of(answer);
    std::vector<std::string> parts(1);  // split at stray closing tags
    std::string inside;                 // the tag whose reasoning we are in
    for (std::size_t line = 0, col = 0; line < a.lines.size();) {
        auto tag = next_tag(a, line, col, inside);
        if (inside.empty())
            parts.back() +=
                tag ? a.lines[line].substr(col, tag->at - col) : a.lines[line].substr(col) + "\n";
        if (!tag) {
            ++line, col = 0;
            continue;
        }
        col = tag->end;
        if (tag->closing && inside.empty()) parts.emplace_back();
        inside = tag->closing ? "" : tag->name;
    }
    if (!inside.empty())
        notes.push_back("the answer ended inside its reasoning (<" + inside +
                        "> was never closed), so it may have been cut off");
    return join_at_stray_tags(parts);
}

const char* const kWhatToDo =
    "reply with the complete program, defining class ModelNew(nn.Module), in one ```python code "
    "block";

// subject: who defines, with its verb ("the code block defines").
std::string no_model_new(const std::vector<std::string>& classes, const std::string& subject) {
    if (classes.empty()) return subject + " no class at all, so no class ModelNew; " + kWhatToDo;
    return subject + " " + list_in_words(classes) + ", but no class ModelNew; " + kWhatToDo;
}

Extraction failed(Extraction e, std::string error) {
    e.code.reset();
    e.error = std::move(error);
    return e;
}

// ---- answers with fences ----

Extraction from_blocks(const std::vector<Block>& blocks, Extraction e) {
    if (!blocks.back().closed)
        e.notes.push_back(fmt::format(
            "the code block opened on line {} was never closed: the answer may have been cut off",
            blocks.back().line));
    std::vector<const Block*> programs;
    for (const auto& block : blocks)
        if (defines_model_new(block.code)) programs.push_back(&block);
    if (programs.empty()) {
        std::string all;
        for (const auto& block : blocks) all += block.code;
        std::string subject = blocks.size() == 1
                                  ? "the code block defines"
                                  : fmt::format("the {} code blocks define", blocks.size());
        return failed(std::move(e), no_model_new(classes_in(all), subject));
    }
    const Block& chosen = *programs.back();
    if (programs.size() > 1)
        e.notes.push_back(
            fmt::format("{} code blocks define class ModelNew; the last one (line {}) was taken",
                        programs.size(), chosen.line));
    std::vector<std::string> others;
    for (const auto& block : blocks)
        if (!defines_model_new(block.code))
            others.push_back(block.language.empty() ? "unlabelled" : block.language);
    if (!others.empty())
        e.notes.push_back(fmt::format(
            "left out {} other code block(s) ({}): only the block that defines ModelNew is the "
            "program, so everything it needs (kernel source too, e.g. as a string passed to "
            "load_inline) must be inside it",
            others.size(), list_in_words(others)));
    e.code = chosen.code;
    return e;
}

// ---- answers without fences ----

bool starts_with_word(std::string_view line, std::string_view word) {
    return line.starts_with(word) &&
           (line.size() == word.size() || !is_name_char(line[word.size()]));
}

// A dotted name at the start of the line, and what follows it.
std::string_view after_name(std::string_view line) {
    std::size_t n = 0;
    while (n < line.size() && (is_name_char(line[n]) || line[n] == '.')) ++n;
    if (n == 0 || std::isdigit(static_cast<unsigned char>(line[0]))) return {};
    return trim(line.substr(n));
}

bool is_assignment(std::string_view line) {
    std::string_view rest = after_name(line);
    while (rest.starts_with(",")) rest = after_name(trim(rest.substr(1)));
    if (rest.starts_with(":")) rest = after_name(trim(rest.substr(1)));  // "n: int = 4"
    for (std::string_view op : {"=", "+=", "-=", "*=", "/="})
        if (rest.starts_with(op)) return !rest.starts_with("==");
    return false;
}

// A line at column 0 where a Python program can begin.
bool starts_code(std::string_view line) {
    for (std::string_view word : {"import", "from", "class", "def", "async"})
        if (starts_with_word(line, word)) return true;
    return line.starts_with("@") || line.starts_with("#") || line.starts_with("\"\"\"") ||
           line.starts_with("r\"\"\"") || line.starts_with("'''") || is_assignment(line);
}

// A line that reads as Python rather than prose.
bool looks_like_code(std::string_view line) {
    if (line.empty() || is_space(line.front()) || starts_code(line)) return true;
    if (std::string_view(")]}").find(line.front()) != std::string_view::npos) return true;
    for (std::string_view word :
         {"return", "raise", "assert", "pass", "break", "continue", "del", "global"})
        if (starts_with_word(line, word)) return true;
    std::string_view end = trim(line);
    for (std::string_view word :
         {"if", "elif", "else", "for", "while", "with", "try", "except", "finally"})
        if (starts_with_word(line, word) && end.ends_with(":")) return true;
    return after_name(line).starts_with("(");
}

Extraction from_text(const std::vector<std::string>& lines, Extraction e) {
    auto is_model_new = [](const std::string& l) { return class_defined(l) == "ModelNew"; };
    auto at = std::find_if(lines.begin(), lines.end(), is_model_new);
    if (at == lines.end()) {
        auto classes = classes_in(join_lines(lines, 0, lines.size()));
        if (!classes.empty())
            return failed(std::move(e), no_model_new(classes, "the answer defines"));
        return failed(
            std::move(e),
            std::string("the answer holds no code block and no class ModelNew; ") + kWhatToDo);
    }
    const std::size_t model = at - lines.begin();
    const auto inside = inside_strings(lines);
    auto prose = [&](std::size_t i) {
        return !inside[i] && !is_blank(lines[i]) && !looks_like_code(lines[i]);
    };
    std::size_t first = 0;
    for (std::size_t i = 0; i < model; ++i)
        if (prose(i)) first = i + 1;
    while (first < model && (inside[first] || !starts_code(lines[first]))) ++first;
    std::size_t last = lines.size() - 1;
    while (last > model && (is_blank(lines[last]) || prose(last))) --last;
    e.notes.push_back(fmt::format(
        "no code fence: the program was taken from lines {}-{} of the answer; put it in one "
        "```python code block",
        first + 1, last + 1));
    e.code = join_lines(lines, first, last);
    return e;
}

}  // namespace

Extraction extract_candidate(const std::string& answer) {
    Extraction e;
    if (is_blank(answer))
        return failed(std::move(e), std::string("the answer is empty; ") + kWhatToDo);
    std::string text = strip_reasoning(answer, e.notes);
    if (is_blank(text))
        return failed(std::move(e),
                      std::string("the answer holds only reasoning (inside <think> tags) and no "
                                  "program; ") +
                          kWhatToDo + " after the reasoning");
    auto lines = split_lines(text);
    auto blocks = fenced_blocks(lines);
    return blocks.empty() ? from_text(lines, std::move(e)) : from_blocks(blocks, std::move(e));
}

}  // namespace kbench::llm
