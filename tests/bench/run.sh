#!/usr/bin/env bash
# `npm run bench`: prints figures (nothing is asserted). Native estimator speed, then the page's
# size and timing figures in headless Chromium when the page benchmark is present.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target trainmem_bench trainmem_plan_bench > /dev/null
echo "== native estimator"
build/tests/trainmem_bench
echo "== native planner"
build/tests/trainmem_plan_bench
if [ -f tests/bench/page-bench.mjs ]; then
  echo "== page"
  node tests/bench/page-bench.mjs
fi
