// Types of web/wasm/trainmem-tools.mjs: the same bindings as trainmem.mjs plus the importers,
// exporters and the planner (wasm/CMakeLists.txt builds both from bindings.cpp).
import type { TrainmemToolsModule } from './trainmem';

/** Emscripten's MODULARIZE factory. In Node pass { wasmBinary } (fetch cannot read file paths). */
declare function createTrainmemTools(overrides?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<TrainmemToolsModule>;
export default createTrainmemTools;
