// What resolve() takes from the field table (fields.cpp); internal to the config room.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

// Writes every field the input sets into `c` (which starts as Config{}: an unset field keeps
// Config{}'s value, the one place simple defaults live). resolve() then fills the derived
// defaults and checks the rules.
void copy_set_fields(const ConfigInput& in, Config& c);

// One issue for each field the input sets where it does not apply (the table's applies_rule,
// e.g. momentum without optimizer sgd), for a config resolved otherwise.
void check_fields_apply(const ConfigInput& in, const Config& c, std::vector<Issue>& issues);

// The rules between fields (rules.cpp), each table walked in order once the defaults it reads are
// derived: one issue per broken rule, with its id and related fields. The model's shape, MoE and
// parallelism; the trainmem profile's fields; the batch.
void check_model_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues);
void check_trainmem_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues);
void check_batch_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues);
// The field documentation's words for the rules that name `field`, "; "-separated ("" when none).
std::string rule_words(std::string_view field);

}  // namespace trainmem
