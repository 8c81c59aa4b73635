#!/usr/bin/env bash
# Builds the WebAssembly side with Debian's Emscripten: the one place that configures build-wasm/.
#   bash web/scripts/build-wasm.sh            the page's modules: web/wasm/trainmem{,-tools}.{mjs,wasm}
#   bash web/scripts/build-wasm.sh all        everything, the Catch2 tests under Node included (npm test)
# Configures once, then builds incrementally: a module older than its sources is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ ! -f build-wasm/CMakeCache.txt ]]; then
  # Pass the emulator ourselves: emcmake's default adds a flag Node 20 rejects.
  emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node > /dev/null
fi
cmake --build build-wasm -j2 --target "${@:-trainmem_wasm}"
