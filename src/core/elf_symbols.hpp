#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/files.hpp"

namespace kbench {

// A function an ELF file defines: its name, its address in the file's own layout (an offset
// from the load address for a shared object) and its size.
struct ElfFunction {
    std::string name;
    std::uint64_t address = 0;
    std::uint64_t size = 0;
};

// The functions a 64-bit little-endian ELF file defines (its .symtab and .dynsym), local ones
// included. Throws InfraError for a file that is not such an ELF file.
std::vector<ElfFunction> elf_functions(const fs::path& file);

// Their names. A CUDA extension defines a host stub under each of its kernels' mangled names,
// which is how a kernel CUPTI reports is traced back to the module that holds it.
std::set<std::string> elf_function_names(const fs::path& file);

}  // namespace kbench
