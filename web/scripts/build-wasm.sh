#!/usr/bin/env bash
# Builds the WebAssembly side with Debian's Emscripten: the one place that configures build-wasm/.
#   bash web/scripts/build-wasm.sh            the page's modules: web/wasm/trainmem{,-tools}.{mjs,wasm}
#   bash web/scripts/build-wasm.sh all        everything, the Catch2 tests under Node included (npm test)
# Configures once, then builds incrementally: a module older than its sources is rebuilt.
# BUILD_WASM_DIR (default build-wasm) and BUILD_WASM_CMAKE_ARGS (extra configure arguments) are
# for tests/bench/build-time.sh, which times a cold build in a folder of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${BUILD_WASM_DIR:-build-wasm}
if [[ ! -f $dir/CMakeCache.txt ]]; then
  # Pass the emulator ourselves: emcmake's default adds a flag Node 20 rejects.
  # shellcheck disable=SC2086  # BUILD_WASM_CMAKE_ARGS is a list of words
  emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node ${BUILD_WASM_CMAKE_ARGS:-} > /dev/null
fi
cmake --build "$dir" -j2 --target "${@:-trainmem_wasm}"
