#!/usr/bin/env bash
# npm start: build what the page needs, then serve web/ on 127.0.0.1:$PORT (default 8080).
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -d node_modules/chart.js ]] || npm ci --no-audit --no-fund
node web/scripts/vendor.mjs
bash web/scripts/build-wasm.sh
exec node web/scripts/serve.mjs "${PORT:-8080}"
