// Embind layer of the trainmem module: JSON text in, JSON text out.
//
// Every function forwards to the core's JSON entry points (core/include/trainmem/json_io.hpp).
// Nothing here computes, validates or defaults a field: the profile travels inside the config
// JSON ("profile": "megatron-lm") and the core checks it like any other field, so an unknown
// name comes back as {"ok": false, "issues": [{"field": "profile", ...}]}.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <exception>
#include <string>

#include "trainmem/json_io.hpp"

namespace {

// Runs f and turns any C++ exception into a JavaScript Error carrying what(). Without this,
// Emscripten 3.1.6 hands JS a bare number (the exception pointer) and the message is lost.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  static std::string last_error;  // static: nothing to destroy when throw_() leaves this frame
  try {
    return f();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown C++ exception";
  }
  emscripten::val::global("Error").new_(emscripten::val(last_error)).throw_();
  __builtin_unreachable();
}

std::string estimate(const std::string& config_json, bool verbose) {
  return guarded([&] {
    trainmem::RunOptions options;
    options.verbose = verbose;
    return trainmem::estimate_json(config_json, options);
  });
}

std::string field_specs() {
  return guarded([] { return trainmem::field_specs_json(); });
}

std::string presets() {
  return guarded([] { return std::string(trainmem::presets_json()); });
}

std::string gpus() {
  return guarded([] { return std::string(trainmem::gpus_json()); });
}

std::string version() { return TRAINMEM_VERSION; }

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("estimate", &estimate);
  emscripten::function("fieldSpecs", &field_specs);
  emscripten::function("presets", &presets);
  emscripten::function("gpus", &gpus);
  emscripten::function("version", &version);
}
