#!/usr/bin/env bash
# Builds web/wasm/trainmem.{mjs,wasm} with Debian's Emscripten (configure once, then incremental).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ ! -f build-wasm/CMakeCache.txt ]]; then
  # Pass the emulator ourselves: emcmake's default adds a flag Node 20 rejects.
  emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node
fi
cmake --build build-wasm -j2 --target trainmem_wasm
