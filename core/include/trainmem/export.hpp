// Exporting a resolved configuration to where people run it (importing: import.hpp).
//
//   export_megatron_args  a resolved Config -> a Megatron-LM argument line
//   export_config_json    a resolved Config -> trainmem's own JSON, every field (json_io.hpp)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

struct MegatronExport {
  std::string args;                // one line of Megatron-LM arguments
  std::vector<std::string> notes;  // what the arguments cannot carry (e.g. the data-parallel size)
};

// The arguments that make Megatron-LM train `config`. import_megatron_args(args) resolves to the
// same Config when the launcher supplies the world size the notes give.
MegatronExport export_megatron_args(const Config& config);

// A 0/1 list as the shortest run-length expression Megatron-LM's --moe-layer-freq accepts:
// "([0]*3+[1]*58)" (parse_moe_layer_freq, import.hpp, reads it back).
std::string moe_layer_freq_expression(const std::vector<uint8_t>& pattern);

}  // namespace trainmem
