#!/usr/bin/env bash
# `npm run bench`: prints figures (nothing is asserted). Native estimator speed, then the page's
# size and timing figures in headless Chromium, web/ and the built dist/ (PAGE_LOADS cold loads
# of each, default 15).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target trainmem_bench trainmem_plan_bench > /dev/null
echo "== native estimator"
build/tests/trainmem_bench
echo "== native planner"
build/tests/trainmem_plan_bench
echo "== page"
node web/scripts/vendor.mjs > /dev/null
bash web/scripts/build-wasm.sh > /dev/null
echo "== the estimator module's bytes"
node tests/bench/wasm-size.mjs --top 10
node tests/bench/page-bench.mjs "${PAGE_LOADS:-15}"
echo "== module calls and estimator passes per keystroke"
node tests/bench/calls-bench.mjs
