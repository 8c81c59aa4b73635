#!/usr/bin/env bash
# npm start: the same set-up as npm test (Debian and npm packages), then what the page needs
# (Chart.js vendored, the wasm modules current), then serve web/ on 127.0.0.1:$PORT (default 8080).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/setup.sh
node web/scripts/vendor.mjs
bash web/scripts/build-wasm.sh
exec node web/scripts/serve.mjs "${PORT:-8080}"
