#include "core/elf_symbols.hpp"

#include <elf.h>

#include <cstring>

#include "core/error.hpp"

namespace kbench {
namespace {

template <typename T>
T at(const std::string& bytes, std::uint64_t offset, const fs::path& file) {
    if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
        throw InfraError("a truncated ELF file: " + file.string());
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

}  // namespace

std::vector<ElfFunction> elf_functions(const fs::path& file) {
    std::string bytes = read_file(file);
    auto header = at<Elf64_Ehdr>(bytes, 0, file);
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
        throw InfraError("not a 64-bit little-endian ELF file: " + file.string());
    std::vector<ElfFunction> functions;
    for (std::uint16_t i = 0; i < header.e_shnum; ++i) {
        auto section =
            at<Elf64_Shdr>(bytes, header.e_shoff + std::uint64_t(i) * header.e_shentsize, file);
        if (section.sh_type != SHT_SYMTAB && section.sh_type != SHT_DYNSYM) continue;
        if (section.sh_link >= header.e_shnum || section.sh_entsize < sizeof(Elf64_Sym)) continue;
        auto strings = at<Elf64_Shdr>(
            bytes, header.e_shoff + std::uint64_t(section.sh_link) * header.e_shentsize, file);
        for (std::uint64_t s = 0; s < section.sh_size / section.sh_entsize; ++s) {
            auto symbol = at<Elf64_Sym>(bytes, section.sh_offset + s * section.sh_entsize, file);
            if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_shndx == SHN_UNDEF) continue;
            std::uint64_t name = strings.sh_offset + symbol.st_name;
            if (symbol.st_name >= strings.sh_size || name >= bytes.size()) continue;
            const char* text = bytes.data() + name;
            functions.push_back(
                {std::string(text, strnlen(text, std::min<std::uint64_t>(
                                                     bytes.size() - name,
                                                     strings.sh_size - symbol.st_name))),
                 symbol.st_value, symbol.st_size});
        }
    }
    return functions;
}

std::set<std::string> elf_function_names(const fs::path& file) {
    std::set<std::string> names;
    for (ElfFunction& f : elf_functions(file)) names.insert(std::move(f.name));
    return names;
}

}  // namespace kbench
