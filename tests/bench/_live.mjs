import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../web/scripts/serve.mjs';
import { buildDist } from '../../web/scripts/build-dist.mjs';
const LINK = 'v=1&m=llama-3.1-70b&tp=8&pp=2&dp=4&s=8192&b=1&gpu=h100-80gb';
const out = await mkdtemp(join(tmpdir(), 'lv-'));
await buildDist(out, { build: false });
const site = await serve({ port: 0, root: out });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
for (let i = 0; i < 3; i++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => {
    window.frames_ = [];
    const snap = () => {
      if (document.documentElement.hasAttribute('data-live')) {
        const txt = (id) => { const el = document.getElementById(id); if (!el || el.hidden || !el.checkVisibility?.()) return '(hidden)'; return el.innerText.replace(/\s+/g, ' ').slice(0, 120); };
        window.frames_.push({ t: Math.round(performance.now()), params: txt('params-card'), peak: txt('peak-card'), stages: txt('stages-card'), report: txt('report-card') });
      }
      if (window.frames_.length < 12) requestAnimationFrame(snap);
    };
    requestAnimationFrame(snap);
  });
  const page = await context.newPage();
  await page.goto(`${site.url}index.html#${LINK}`);
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 30000 });
  await page.waitForTimeout(500);
  const frames = await page.evaluate(() => window.frames_);
  const last = frames.at(-1);
  for (const f of frames.slice(0, 6)) console.log(f.t, ['params', 'peak', 'stages', 'report'].map((k) => `${k}:${f[k] === last[k] ? 'final' : JSON.stringify(f[k].slice(0, 70))}`).join(' | '));
  console.log('---');
  await context.close();
}
await browser.close(); site.server.close(); await rm(out, { recursive: true, force: true });
