// Copies the page's third-party code from node_modules into web/vendor/ (the page loads no CDN,
// and tests run offline):
//   - Chart.js: the UMD build is self-contained and registers every chart type (no import map);
//   - yaml and smol-toml, the import panel's YAML and TOML parsers (loaded only when a framework
//     config is imported): their browser ES module builds, each bundled into one file by Debian's
//     esbuild (tests/setup.sh installs it) so that the page fetches one module per parser.
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);
const modules = new URL('node_modules/', root);
const vendor = new URL('web/vendor/', root);
const versionOf = async (name) => JSON.parse(await readFile(new URL(`${name}/package.json`, modules), 'utf8')).version;

await mkdir(vendor, { recursive: true });
await copyFile(new URL('chart.js/dist/chart.umd.js', modules), new URL('chart.umd.js', vendor));
await copyFile(new URL('chart.js/LICENSE.md', modules), new URL('chart.js-LICENSE.md', vendor));
console.log(`vendored Chart.js ${await versionOf('chart.js')} into ${fileURLToPath(vendor)}`);

// [package, its browser ES module entry, the file the page imports]
const parsers = [['yaml', 'yaml/browser/index.js', 'yaml.mjs'], ['smol-toml', 'smol-toml/dist/index.js', 'smol-toml.mjs']];
for (const [name, entry, out] of parsers) {
  try {
    execFileSync('esbuild', [fileURLToPath(new URL(entry, modules)), '--bundle', '--format=esm', '--minify', '--target=es2022',
      '--legal-comments=inline', `--outfile=${fileURLToPath(new URL(out, vendor))}`, '--log-level=warning'], { stdio: 'inherit' });
  } catch (error) {
    if (error.code === 'ENOENT') throw new Error('esbuild is missing: run bash tests/setup.sh (it installs Debian\'s esbuild)');
    throw error;
  }
  await copyFile(new URL(`${name}/LICENSE`, modules), new URL(`${name}-LICENSE.txt`, vendor));
  console.log(`vendored ${name} ${await versionOf(name)} into ${fileURLToPath(new URL(out, vendor))}`);
}
