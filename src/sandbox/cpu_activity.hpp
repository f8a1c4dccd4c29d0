#pragma once

#include "protocol/sandbox_messages.hpp"

namespace kbench::worker {

// On a CPU, what ran in a sandbox's model calls: samples of the program counter of each of its
// threads that ran, one per 50 us of that thread's CPU time, taken in the model calls of
// untimed requests only (a thread of its own signals the others; nothing of it runs while a
// call is timed). A report names each sample's function from its file's symbol table, and the
// file: by its name for a library ("relu_kernel (libtorch_cpu.so)"), by its path from "./" for
// one in the candidate's own folder, the only place it can write, so its code whether built by
// kbench or by itself ("relu_forward (./relu_ext/relu_ext.so)"). Like the GPU's kernel records
// it is a claim of the sandbox's.
namespace cpu_activity {

// Installs the signal handler and starts the sampling thread; "" or why not (then every report
// says so).
std::string start();

// The candidate's folder (its file's).
void own_folder(const std::string& folder);

// Sampling on (an untimed request's calls) or off.
void sample(bool on);
// Around each model call (the windows and calls of every request are counted).
void call_begin();
void call_end();

// The samples since the last report, one row per function and file.
protocol::KernelsReported report();

}  // namespace cpu_activity
}  // namespace kbench::worker
