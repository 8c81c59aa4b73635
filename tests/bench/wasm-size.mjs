// Where the estimator module's bytes are: prints raw, gzip (-9) and brotli (quality 11) sizes of
// web/wasm/trainmem.wasm by part. It asserts nothing; README's benchmark table quotes it.
//   node tests/bench/wasm-size.mjs [module.wasm] [--top N] [--build DIR (its build folder: build-wasm)]
// Parts: the wasm sections; the code section by function (names from the build's symbol map,
// build-wasm/wasm/trainmem.mjs.symbols: configure with -DTRAINMEM_WASM_SYMBOL_MAP=ON) grouped by the source file
// that defines each function (llvm-nm over build-wasm/'s core objects) or by library; the data
// section split into core/data's embedded files and the other constant data, whose strings are
// attributed to the core source file that holds their text.
// A part's gzip size is measured alone, so the parts' sizes add up to more than the whole's.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const ROOT = join(dirname(new URL(import.meta.url).pathname), '..', '..');
const args = process.argv.slice(2);
const topIndex = args.indexOf('--top');
const TOP = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
const buildIndex = args.indexOf('--build');
const BUILD = buildIndex >= 0 ? args.splice(buildIndex, 2)[1] : join(ROOT, 'build-wasm');
const WASM = args[0] ?? join(ROOT, 'web/wasm/trainmem.wasm');
const bytes = readFileSync(WASM);

const gzip = (b) => gzipSync(b, { level: 9 }).length;
const brotli = (b) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const row = (label, part, width = 44) =>
  console.log(`  ${label.padEnd(width)} ${kb(part.length).padStart(9)} raw ${kb(gzip(part)).padStart(9)} gzip`);

// ---- the binary format (WebAssembly core spec §5: sections, LEB128 integers) ----
function leb(at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}
const SECTION_NAMES = ['custom', 'type', 'import', 'function', 'table', 'memory', 'global', 'export', 'start',
  'element', 'code', 'data', 'datacount', 'tag'];
const sections = [];
for (let at = 8; at < bytes.length;) {
  const id = bytes[at];
  const [size, start] = leb(at + 1);
  sections.push({ id, name: SECTION_NAMES[id] ?? `section ${id}`, start, end: start + size, whole: bytes.subarray(at, start + size) });
  at = start + size;
}
const section = (name) => sections.find((s) => s.name === name);

// Imported functions come first in the function index space (the symbol map's indices).
function importedFunctions() {
  const imports = section('import');
  if (!imports) return 0;
  let [count, at] = leb(imports.start), functions = 0;
  for (let i = 0; i < count; i++) {
    for (let name = 0; name < 2; name++) { const [n, next] = leb(at); at = next + n; }
    const kind = bytes[at++];
    if (kind === 0) { functions++; at = leb(at)[1]; }
    else if (kind === 1) { at += 1; const flags = bytes[at++]; at = leb(at)[1]; if (flags & 1) at = leb(at)[1]; }
    else if (kind === 2) { const flags = bytes[at++]; at = leb(at)[1]; if (flags & 1) at = leb(at)[1]; }
    else if (kind === 3) { at += 2; }
    else if (kind === 4) { at += 1; at = leb(at)[1]; }
  }
  return functions;
}

function functionBodies() {
  const code = section('code');
  let [count, at] = leb(code.start);
  const first = importedFunctions(), bodies = [];
  for (let i = 0; i < count; i++) {
    const [size, start] = leb(at);
    bodies.push({ index: first + i, body: bytes.subarray(at, start + size) });
    at = start + size;
  }
  return bodies;
}

function dataSegments() {
  const data = section('data');
  let [count, at] = leb(data.start);
  const segments = [];
  for (let i = 0; i < count; i++) {
    const [flags, next] = leb(at);
    at = next;
    if (flags === 2) at = leb(at)[1];
    if (flags !== 1) { while (bytes[at] !== 0x0b) at++; at++; } // the offset's constant expression
    const [size, start] = leb(at);
    segments.push(bytes.subarray(start, start + size));
    at = start + size;
  }
  return segments;
}

// ---- names: the symbol map, demangled; each name's defining source file from llvm-nm ----
function symbolNames() {
  const name = basename(WASM, '.wasm') + '.mjs.symbols';
  const map = [join(BUILD, 'wasm', name), join(dirname(WASM), name)].find(existsSync);
  if (!map) return null;
  const names = new Map();
  for (const line of readFileSync(map, 'utf8').split('\n')) {
    const colon = line.indexOf(':');
    // Emscripten writes the names demangled, with \XX escapes for bytes outside [A-Za-z0-9_:<>*&$.-].
    if (colon > 0) names.set(Number(line.slice(0, colon)),
      line.slice(colon + 1).replace(/\\([0-9a-f]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16))));
  }
  return names;
}

function definingFiles() {
  const objects = join(BUILD, 'core/CMakeFiles/trainmem_core.dir');
  const files = new Map();
  if (!existsSync(objects)) return files;
  const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.o') ? [join(dir, e.name)] : []);
  for (const object of walk(objects)) {
    let out;
    try { out = execFileSync('llvm-nm', ['--demangle', '--defined-only', object], { encoding: 'utf8', maxBuffer: 1 << 26 }); }
    catch { return files; }
    const source = relative(objects, object).replace(/\.o$/, '');
    for (const line of out.split('\n')) {
      const m = line.match(/^\S+ [TtWw] (.+)$/);
      if (m && !files.has(m[1])) files.set(m[1], `core/${source}`);
    }
  }
  return files;
}

/** Where a function comes from when no core object defines it: the library, by its name. */
function library(name) {
  if (/emscripten|embind|_emval|EmscriptenBindingInitializer|^emscripten::/.test(name)) return 'embind / emscripten runtime';
  if (/^std::|^__cxx|^__cxa|^__gxx|^void std::|^(bool|int|unsigned|long|char|double) std::/.test(name)) return 'libc++ / libc++abi';
  if (/^(dl|emscripten_builtin_)?(malloc|free|calloc|realloc|memalign|sbrk)$|^dlmalloc/.test(name)) return 'malloc';
  if (/^trainmem::/.test(name)) return 'trainmem (inlined or in bindings)';
  return 'libc and the rest';
}

// ---- the report ----
console.log(`${relative(process.cwd(), WASM) || WASM}: ${kb(bytes.length)} raw, ${kb(gzip(bytes))} gzip, ${kb(brotli(bytes))} brotli`);
const GLUE = WASM.replace(/\.wasm$/, '.mjs');
if (existsSync(GLUE)) {
  const glue = readFileSync(GLUE);
  console.log(`its glue ${basename(GLUE)}: ${kb(glue.length)} raw, ${kb(gzip(glue))} gzip, ${kb(brotli(glue))} brotli;` +
    ` the two: ${kb(gzip(bytes) + gzip(glue))} gzip`);
}
console.log('\nsections (each compressed alone):');
for (const s of sections) if (s.whole.length > 1024) row(s.name, s.whole);

const bodies = functionBodies();
const names = symbolNames();
console.log(`\ncode: ${bodies.length} functions`);
if (names) {
  const readable = bodies.map((f) => names.get(f.index) ?? `function ${f.index}`);
  const files = definingFiles();
  const groups = new Map();
  bodies.forEach((f, i) => {
    f.name = readable[i];
    const group = files.get(readable[i]) ?? library(f.name);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(f.body);
  });
  console.log(' by defining source file (a function inlined elsewhere counts where it landed):');
  for (const [group, parts] of [...groups].sort((a, b) => Buffer.concat(b[1]).length - Buffer.concat(a[1]).length)) {
    row(`${group} (${parts.length})`, Buffer.concat(parts), 56);
  }
  console.log(` the ${TOP} largest functions:`);
  for (const f of [...bodies].sort((a, b) => b.body.length - a.body.length).slice(0, TOP)) {
    console.log(`  ${kb(f.body.length).padStart(9)}  ${f.name.length > 110 ? `${f.name.slice(0, 107)}...` : f.name}`);
  }
} else {
  console.log('  (no symbol map: configure build-wasm/ with -DTRAINMEM_WASM_SYMBOL_MAP=ON for names)');
}

// Data: core/data's files are found by their text (core/embed_data.cmake embeds them verbatim);
// the rest are the core's constant strings and tables.
const data = Buffer.concat(dataSegments());
console.log('\ndata:');
let rest = data;
for (const file of readdirSync(join(ROOT, 'core/data')).filter((f) => f.endsWith('.json')).sort()) {
  const text = readFileSync(join(ROOT, 'core/data', file));
  const at = rest.indexOf(text);
  if (at < 0) continue;
  row(`core/data/${file}`, text);
  rest = Buffer.concat([rest.subarray(0, at), rest.subarray(at + text.length)]);
}
row('other constant data', rest);

// The other data's strings, each attributed to the core source file whose text holds its start.
const sources = [];
const walkSources = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) walkSources(path);
    else if (/\.(cpp|hpp)$/.test(e.name)) sources.push({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') });
  }
};
walkSources(join(ROOT, 'core'));
walkSources(join(ROOT, 'wasm'));
const byFile = new Map();
let strings = 0;
for (const piece of rest.toString('latin1').split('\0')) {
  if (piece.length < 16 || !/^[\x20-\x7e]/.test(piece)) continue;
  const probe = Buffer.from(piece.slice(0, 24), 'latin1').toString('utf8').replace(/\n/g, '\\n');
  const home = sources.find((s) => s.text.includes(probe))?.path ?? 'not found in core/ (library text, or joined at build)';
  byFile.set(home, (byFile.get(home) ?? 0) + piece.length);
  strings += piece.length;
}
console.log(` strings of 16 characters or more in the other data: ${kb(strings)}, by the source file that holds them:`);
for (const [file, size] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
  console.log(`  ${file.padEnd(56)} ${kb(size).padStart(9)} raw`);
}
