#!/usr/bin/env bash
# `npm test`: installs what is missing, builds everything and runs every test.
#   1. Catch2 tests of the core, native (g++), by ctest, also once in random order; CLI tests
#   2. the same Catch2 tests compiled with em++ and run in Node (proves the wasm build of the core)
#   3. Node tests of the WebAssembly module (tests/wasm)
#   4. browser tests of the page in headless Chromium (tests/web)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh

jobs=2
echo "== native build and Catch2 tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== CLI tests"
node --test tests/cli/

echo "== wasm build (core, module, Catch2 tests under Node)"
emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node > /dev/null
cmake --build build-wasm -j"$jobs"
ctest --test-dir build-wasm --output-on-failure

echo "== page assets"
node web/scripts/vendor.mjs

echo "== Node tests of the module"
node --test tests/wasm/

echo "== browser tests"
node tests/web/browser-check.mjs
