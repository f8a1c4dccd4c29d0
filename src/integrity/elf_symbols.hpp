#pragma once

#include <set>
#include <string>

#include "core/files.hpp"

namespace kbench::integrity {

// The names of the functions a 64-bit little-endian ELF file defines (its .symtab and .dynsym).
// A CUDA extension defines a host stub under each of its kernels' mangled names, which is how a
// kernel CUPTI reports is traced back to the module that holds it. Throws InfraError for a file
// that is not such an ELF file.
std::set<std::string> elf_function_names(const fs::path& file);

}  // namespace kbench::integrity
