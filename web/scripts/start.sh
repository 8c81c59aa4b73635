#!/usr/bin/env bash
# npm start: the same set-up as npm test (Debian and npm packages), then the page as a host would
# serve it: dist/ built (npm run build: the wasm modules current, Chart.js vendored, content-hashed
# names, .gz and .br beside each file) and served on 127.0.0.1:$PORT (default 8080), compressed
# and with cache headers.
#   npm start -- --dev    (or TRAINMEM_DEV=1 npm start) serves web/ as it is instead, uncompressed
#                         and revalidated on every load: edit a file and reload.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/setup.sh
if [[ "${1:-}" == --dev || "${TRAINMEM_DEV:-}" == 1 ]]; then
  node web/scripts/vendor.mjs
  bash web/scripts/build-wasm.sh
  exec node web/scripts/serve.mjs --dev "${PORT:-8080}"
fi
node web/scripts/build-dist.mjs dist
exec node web/scripts/serve.mjs --root dist "${PORT:-8080}"
