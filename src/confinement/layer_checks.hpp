#pragma once

#include <sys/types.h>

#include <string>

#include "protocol/lockdown_spec.hpp"

// Whether the layers a confined process reported applied took effect, seen from outside it
// through /proc/<pid>: a layer's own report says its step returned no error, the check says what
// the kernel shows of the process afterwards. One check a layer (layer_checks.cpp's table).
namespace kbench::sandbox {

struct LayerCheck {
    enum Result { confirmed, contradicted, unreadable } result = unreadable;
    std::string why;  // what was seen, where not confirmed
};

// The check of one layer (an id of layer_table()) of process pid, confined under spec.
LayerCheck check_layer(const std::string& layer, pid_t pid, const LockdownSpec& spec);

// Whether check_layer knows the layer.
bool layer_has_check(const std::string& layer);

// Checks every layer the report calls applied: one that the kernel contradicts moves to missing,
// with what was seen. One that cannot be read (the process ended meanwhile) stays as reported.
void check_layers(LayerReport& report, pid_t pid, const LockdownSpec& spec);

}  // namespace kbench::sandbox
