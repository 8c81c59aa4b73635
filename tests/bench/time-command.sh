#!/usr/bin/env bash
# Compiler and linker launcher of tests/bench/build-time.sh: runs the command and appends
# "wall_seconds cpu_seconds output_file" to $BUILD_TIME_LOG. CPU (user + system) is what the
# bench sums: on a shared machine a compile's wall time depends on its neighbours, its CPU time
# much less.
out=""; prev=""
for arg in "$@"; do [[ $prev == -o ]] && out=$arg; prev=$arg; done
times=$(mktemp)
/usr/bin/time -o "$times" -f "%e %U %S" "$@"; status=$?
read -r wall user sys < <(tail -n 1 "$times"); rm -f "$times"
echo "$wall $(echo "$user + $sys" | bc) ${out#"$PWD"/}" >> "${BUILD_TIME_LOG:-/dev/null}"
exit $status
