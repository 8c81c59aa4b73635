// `npm run bench` (part): how many module calls and trainmem estimator passes one keystroke costs
// on the page, and a shared link's restore, measured in headless Chromium on the development
// server (window.trainmemStats.engineWork: the engine's call counts and the core's
// estimator_passes). Prints figures beside their targets (issue 30: one module call and one
// trainmem pass per keystroke); asserts nothing.
import { chromium } from 'playwright-core';
import { serve } from '../../web/scripts/serve.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const { server, url: base } = await serve();
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });

/** Opens the page at `fragment`, waits for its answer, and returns the work done so far and per keystroke. */
async function measure(fragment, field, values) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}index.html${fragment}`);
  await page.waitForFunction(() => typeof window.trainmemStats?.engineWork === 'function' && document.getElementById('total')?.dataset.bytes);
  await page.waitForTimeout(300); // the trace follows typing pauses: let it settle before counting
  const atLoad = await page.evaluate(() => window.trainmemStats.engineWork());
  const perKey = await page.evaluate(async ({ field, values }) => {
    const el = document.getElementById(`f-${field}`);
    const out = [];
    for (const value of values) {
      const before = window.trainmemStats.engineWork();
      el.value = String(value);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); // the settle frame too
      const after = window.trainmemStats.engineWork();
      const calls = Object.keys(before).filter((k) => k !== 'passes').reduce((n, k) => n + after[k] - before[k], 0);
      out.push({ calls, passes: after.passes - before.passes });
    }
    return out;
  }, { field, values });
  await page.close();
  return { atLoad, perKey };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cases = [
  ['the fresh page (its start setup), a keystroke on seq_length', '', 'seq_length', [4096, 8192, 2048, 8192]],
  ['8B QLoRA setup, a keystroke', '#su=llama-3.1-8b-qlora-torchtune-1x4090', 'lora_rank', [16, 32, 64, 8]],
  ["the issue's link, a keystroke", '#v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb', 'micro_batch_size', [1, 2, 1, 2]],
];
console.log('| case | module calls / keystroke | trainmem passes / keystroke | target | calls at load (link restore included) |');
console.log('|---|--:|--:|---|---|');
for (const [name, fragment, field, values] of cases) {
  const { atLoad, perKey } = await measure(fragment, field, values);
  const calls = median(perKey.map((k) => k.calls));
  const passes = median(perKey.map((k) => k.passes));
  const load = Object.entries(atLoad).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(', ');
  console.log(`| ${name} | ${calls} | ${passes} | 1 call, 1 pass (when it fits) | ${load} |`);
}
await browser.close();
server.close();
