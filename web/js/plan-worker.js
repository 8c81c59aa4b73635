// Runs the planner off the main thread, so typing never waits for a search. Messages are plain
// objects: in {id, config, options}; out {id, result, ms} (result is engine.plan's).
import { createToolsEngine } from './engine.js';

const enginePromise = createToolsEngine();

self.addEventListener('message', async (event) => {
  const { id, config, options } = event.data;
  try {
    const engine = await enginePromise;
    const t0 = performance.now();
    const result = engine.plan(config, options);
    self.postMessage({ id, result, ms: performance.now() - t0 });
  } catch (error) {
    self.postMessage({ id, result: { ok: false, issues: [{ field: '', message: String(error.message ?? error) }] }, ms: 0 });
  }
});
