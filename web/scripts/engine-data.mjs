// Writes the build's data beside the page's modules: trainmem-data.json, what the page reads from
// the core once before its first estimate (the field specs the slots follow, the method settings,
// the result's schema and tables, the presets, GPUs and setups), taken from the tools module of
// the same build (web/js/engine.js engineDataOf). The estimator module has none of it (issue 31),
// and the Engine refuses data whose version or field count is not its module's.
// Run by wasm/CMakeLists.txt after the tools module links:
//   node web/scripts/engine-data.mjs <folder of trainmem-tools.mjs and .wasm>
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { engineDataOf } from '../js/engine.js';

const folder = resolve(process.argv[2] ?? new URL('../wasm/', import.meta.url).pathname);
const factory = (await import(pathToFileURL(join(folder, 'trainmem-tools.mjs')).href)).default;
const module = await factory({ wasmBinary: await readFile(join(folder, 'trainmem-tools.wasm')) });
await writeFile(join(folder, 'trainmem-data.json'), `${JSON.stringify(engineDataOf(module))}\n`);
