#include "confinement/mountinfo.hpp"

#include <fstream>
#include <iterator>
#include <sstream>

namespace kbench::sandbox {
namespace {

// A path as mountinfo writes it: space, tab, newline and backslash as three octal digits.
std::string unescaped(const std::string& field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        bool octal = field[i] == '\\' && i + 3 < field.size();
        for (std::size_t k = 1; octal && k <= 3; ++k)
            octal = field[i + k] >= '0' && field[i + k] <= '7';
        if (octal) {
            out += char(std::stoi(field.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

}  // namespace

std::string MountEntry::option(std::string_view name) const {
    for (const std::string& o : options)
        if (o.size() > name.size() && o.compare(0, name.size(), name) == 0 && o[name.size()] == '=')
            return o.substr(name.size() + 1);
    return "";
}

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
    std::vector<MountEntry> out;
    std::istringstream lines{std::string(text)};
    for (std::string line; std::getline(lines, line);) {
        std::istringstream fields(line);
        std::string id, parent, device, root, point, word;
        if (!(fields >> id >> parent >> device >> root >> point)) continue;
        // Mount options, then optional fields ("shared:1"), up to the separator.
        bool separated = false;
        while (fields >> word)
            if (word == "-") {
                separated = true;
                break;
            }
        MountEntry m;
        std::string options;
        if (!separated || !(fields >> m.type >> m.source >> options)) continue;
        m.root = unescaped(root);
        m.point = unescaped(point);
        m.source = unescaped(m.source);
        std::stringstream names(options);
        for (std::string name; std::getline(names, name, ',');) m.options.push_back(name);
        out.push_back(std::move(m));
    }
    return out;
}

std::vector<MountEntry> own_mounts() {
    std::ifstream in("/proc/self/mountinfo");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_mountinfo(text);
}

}  // namespace kbench::sandbox
