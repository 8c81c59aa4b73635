#!/usr/bin/env bash
# `npm test`: installs what is missing, builds everything and runs every test.
#   1. Catch2 tests of the core, native (g++), by ctest, also once in random order; CLI tests
#   2. the same Catch2 tests compiled with em++ and run in Node (proves the wasm build of the core)
#   3. Node tests of the WebAssembly module (tests/wasm)
#   4. browser tests of the page in headless Chromium (tests/web), and npm start serving the page
#   5. the Catch2 tests again under AddressSanitizer + UndefinedBehaviorSanitizer (clang), and the
#      libFuzzer harnesses for a bounded time (FUZZ_SECONDS each, default 10), replaying every
#      input in tests/fuzz/regressions first
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh

jobs=2
build_jobs=$jobs
source tests/build-steps.sh   # the three builds (tests/bench/build-time.sh times them cold)
echo "== native build and Catch2 tests"
build_native build
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== CLI tests"
node --test tests/cli/
node --test tests/validation/
node tests/oracle/compare.mjs --strict   # trace oracle (/usr/bin/python3, python3-torch): activations within 1 %
node tests/oracle/timeline.mjs --strict  # allocation timeline oracle: the step's moments byte for byte

echo "== wasm build (core, module, Catch2 tests under Node)"
build_wasm build-wasm
ctest --test-dir build-wasm --output-on-failure

echo "== page assets"
node web/scripts/vendor.mjs

echo "== Node tests of the module"
node --test tests/wasm/

echo "== browser tests"
node tests/web/browser-check.mjs
node --test tests/web/serve.test.mjs tests/web/start.test.mjs   # dist/: hashed, precompressed; npm start

echo "== sanitizers and fuzzing (clang, ASan + UBSan, libFuzzer)"
build_fuzz build-fuzz
ctest --test-dir build-fuzz --output-on-failure -j"$jobs"
for pair in config:config hf_import:hf megatron_args:megatron slots:slots torchtune:torchtune torchtitan:torchtitan \
    deepspeed:deepspeed axolotl:axolotl accelerate:accelerate; do
  harness=build-fuzz/tests/fuzz_${pair%%:*}
  corpus=${pair##*:}
  regressions=(tests/fuzz/regressions/"$corpus"/*)
  [ -e "${regressions[0]}" ] && "$harness" "${regressions[@]}"
  mkdir -p build-fuzz/corpus/"$corpus" build-fuzz/crashes
  log=build-fuzz/fuzz-"$corpus".log
  if ! "$harness" -max_total_time="${FUZZ_SECONDS:-10}" -print_final_stats=1 \
      -artifact_prefix=build-fuzz/crashes/ build-fuzz/corpus/"$corpus" tests/fuzz/corpus/"$corpus" > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzzing found a crash: the input is in build-fuzz/crashes/ (see tests/fuzz/README.md)"
    exit 1
  fi
  grep -E "^stat::number_of_executed_units" "$log"
done
echo "fuzzing: no crash"
