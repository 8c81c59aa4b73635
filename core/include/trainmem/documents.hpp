// YAML and TOML documents as JSON trees, for the framework importers (import.hpp). Native build
// only: libyaml-cpp and toml++ parse; the wasm module receives the tree the page's own parsers
// (the npm packages yaml and smol-toml) made. Both sides follow the same conventions, so one
// file gives one tree:
//   - YAML 1.2 core schema for plain scalars: null (~, null, Null, NULL, empty), booleans
//     (true/True/TRUE, false/False/FALSE), integers (decimal, 0o octal, 0x hex), floats (with
//     .inf and .nan as the strings "inf", "-inf", "nan"); quoted scalars stay strings;
//   - mapping keys are their scalar text; a repeated key is an error, as the yaml package says;
//   - TOML dates and times become their text; infinite and NaN floats the strings above.
// A syntax error is one Issue, "<name>: line L, column C: <what the library says>" (1-based).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

struct DocumentTree {
  std::string json;           // the tree as JSON text; empty when issues is not
  std::vector<Issue> issues;  // the syntax error, named by `name`
  bool ok() const { return issues.empty(); }
};

// `name` names the document in messages (the file's path, "RECIPE.yaml").
DocumentTree yaml_document_tree(std::string_view text, std::string_view name);
DocumentTree toml_document_tree(std::string_view text, std::string_view name);

}  // namespace trainmem
