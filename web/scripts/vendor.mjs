// Copies Chart.js from node_modules into web/vendor/ (the page loads no CDN, and tests run offline).
// The UMD build is self-contained and registers every chart type, so no import map is needed.
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);
const chartDir = new URL('node_modules/chart.js/', root);
const vendor = new URL('web/vendor/', root);

const { version } = JSON.parse(await readFile(new URL('package.json', chartDir), 'utf8'));
await mkdir(vendor, { recursive: true });
await copyFile(new URL('dist/chart.umd.js', chartDir), new URL('chart.umd.js', vendor));
await copyFile(new URL('LICENSE.md', chartDir), new URL('chart.js-LICENSE.md', vendor));
console.log(`vendored Chart.js ${version} into ${fileURLToPath(vendor)}`);
