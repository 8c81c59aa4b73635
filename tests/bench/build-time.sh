#!/usr/bin/env bash
# The suite's three builds of the core timed cold, as on CI's fresh clone (2 cores, -j2), against
# the project's budget: the whole suite well under 15 minutes.
#   bash tests/bench/build-time.sh [native] [wasm] [fuzz]   (default: all three, one after another)
# Each build runs in a fresh folder build-time/<name> with the same commands as npm test
# (tests/build-steps.sh), every compile and link through tests/bench/time-command.sh. Prints each
# build's wall seconds, its CPU seconds (compiles and links, summed: on an idle 2-core machine the
# wall time is about half of it plus the serial links), and its slowest translation units by CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/build-steps.sh
budget=900
launcher=$PWD/tests/bench/time-command.sh
builds=("${@:-native wasm fuzz}")
read -r -a builds <<< "${builds[*]}"
mkdir -p build-time
summary=()
for build in "${builds[@]}"; do
  dir=build-time/$build
  rm -rf "$dir"
  export BUILD_TIME_LOG=$PWD/build-time/$build.times
  rm -f "$BUILD_TIME_LOG"
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s.%N)
  extra=()   # the modules stay out of web/wasm; emcc's links keep their own launcher (wasm/CMakeLists.txt)
  [[ $build == wasm ]] && extra=(-DTRAINMEM_WASM_OUT="$PWD/$dir/web-wasm")
  "build_$build" "$dir" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_LINKER_LAUNCHER="$launcher" "${extra[@]}" \
    > build-time/"$build".log 2>&1 || { tail -n 40 build-time/"$build".log; exit 1; }
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  cpu=$(awk '{s += $2} END {printf "%.0f", s}' "$BUILD_TIME_LOG")
  count=$(wc -l < "$BUILD_TIME_LOG")
  echo "== $build: wall $(printf %.0f "$wall") s, CPU $cpu s over $count compiles and links (load ${load_before} -> ${load_after})"
  echo "   slowest by CPU seconds:"
  sort -k2,2 -rn "$BUILD_TIME_LOG" | head -n 8 | awk '{printf "   %7.1f  %s\n", $2, $3}'
  summary+=("$(printf '%-7s wall %5.0f s   CPU %5s s' "$build" "$wall" "$cpu")")
done
echo "== builds, cold, -j2 (budget of the whole suite: $budget s)"
total=0
for line in "${summary[@]}"; do echo "   $line"; done
for build in "${builds[@]}"; do
  total=$(awk -v t="$total" '{s += $2} END {print t + s}' build-time/"$build".times)
done
echo "   CPU of the builds together: $(printf %.0f "$total") s, about $(printf %.0f "$(echo "$total / 2" | bc -l)") s on 2 idle cores"
