#!/usr/bin/env bash
# Installs what building and testing trainmem needs, and nothing that is already there:
# Debian packages (compilers' companions, Catch2, the JSON library, Emscripten, Chromium) and the
# npm packages of package-lock.json. Safe to run again; used by `npm test` and `npm start`.
set -euo pipefail
cd "$(dirname "$0")/.."

debian_packages=(cmake g++ clang libclang-rt-14-dev catch2 nlohmann-json3-dev libyaml-cpp-dev libtomlplusplus-dev emscripten chromium python3-torch esbuild)
missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm packages: reinstall when package-lock.json is newer than the installed tree.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages"
  npm ci --no-audit --no-fund
fi
