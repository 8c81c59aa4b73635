# The suite's three builds of the core, one function each, sourced by tests/run-all.sh (npm test)
# and tests/bench/build-time.sh (which times them cold), so the bench times what CI builds.
# Each takes the build folder, then extra cmake configure arguments. Run from the repository root.
build_jobs=${build_jobs:-2}

# g++, Release: the CLI and the Catch2 tests.
build_native() {
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
  cmake --build "$dir" -j"$build_jobs" --target trainmem trainmem_tests   # benchmarks: npm run bench
}

# em++: the page's two modules and the Catch2 tests run under Node (web/scripts/build-wasm.sh
# configures it; BUILD_WASM_DIR and BUILD_WASM_CMAKE_ARGS are for the bench).
build_wasm() {
  local dir=$1; shift
  BUILD_WASM_DIR=$dir BUILD_WASM_CMAKE_ARGS="$*" bash web/scripts/build-wasm.sh all
}

# clang, AddressSanitizer + UndefinedBehaviorSanitizer (at -O1 -g1, CMakeLists.txt): the Catch2
# tests and the libFuzzer harnesses.
fuzz_harnesses=(fuzz_config fuzz_hf_import fuzz_megatron_args fuzz_slots fuzz_torchtune fuzz_torchtitan
  fuzz_deepspeed fuzz_axolotl fuzz_accelerate)
build_fuzz() {
  local dir=$1; shift
  CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRAINMEM_SANITIZE=ON -DTRAINMEM_FUZZ=ON "$@" > /dev/null
  cmake --build "$dir" -j"$build_jobs" --target trainmem_tests "${fuzz_harnesses[@]}"
}
