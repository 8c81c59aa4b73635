// A classic script in <head>, run before the first paint.
// - A page opened with a link (any fragment) marks the document: the stylesheet lays out none of
//   <main> until main.js has written the link's own answer (dist/'s prerendered answer is the
//   fresh page's), then the headline's card and the breakdown alone until the page is live.
// - Edits made before the page is live are kept, not lost: dist/'s prerendered inputs (the GPU,
//   the unit, the presets) can be used at once; the last value of each control is queued here and
//   main.js replays them on the live controls (window.trainmemQueue.take()).
// - dist/'s first document lays out the answer and little else: the rest of the page waits in
//   <template data-deferred="N"> elements, whose text and controls a first frame would otherwise lay
//   out before it could paint the headline (stage 2's at the document's end, after the answer,
//   an empty template marking each one's place). Each stage is put in place in the task after a frame,
//   once the document is parsed: 1, the result cards below the headline (the breakdown table
//   first); 2, the inputs' contents, the explanation and the embed dialog. main.js waits for
//   'trainmem:unfolded' (web/ has no templates: there it comes once the document is parsed), and
//   puts stage 1 in place itself for a link's first answer (window.trainmemUnfold(1)). A link's
//   page puts stage 2 in place only when main.js asks (window.trainmemUnfoldAll), after the
//   link's answer is painted: its layout and style would otherwise come before the answer.
// - The estimator module's fetch and compile start here, before the parser reaches the body:
//   engine.js instantiates what this compiled (window.trainmemWasm) instead of fetching the module
//   when its glue runs, after the page's scripts have arrived. Streaming: it compiles as it
//   downloads. Where it cannot (no compileStreaming, a host that does not send application/wasm)
//   it resolves to null and the glue fetches the module itself. The build's data beside it
//   (window.trainmemData: the field specs, presets and GPUs the first answer reads) likewise:
//   null where it fails, and engine.js fetches it again and says why.
if (location.hash.length > 1) document.documentElement.setAttribute('data-link', '');
window.trainmemWasm = typeof WebAssembly === 'object' && typeof WebAssembly.compileStreaming === 'function'
  ? WebAssembly.compileStreaming(fetch('wasm/trainmem.wasm', { credentials: 'same-origin' })).catch(() => null)
  : null;
window.trainmemData = fetch('wasm/trainmem-data.json', { credentials: 'same-origin' })
  .then((response) => (response.ok ? response.json() : null)).catch(() => null);
{ // a block: a classic script's top-level names would be the page's globals
  const edits = new Map(); // control id -> { value, checked }: its last value
  const keep = (event) => {
    const el = event.target;
    if (el?.id && 'value' in el) edits.set(el.id, { value: el.value, checked: el.checked });
  };
  document.addEventListener('input', keep, true);
  document.addEventListener('change', keep, true);
  window.trainmemQueue = {
    /** The queued edits, in the order first made; stops queueing. */
    take() {
      document.removeEventListener('input', keep, true);
      document.removeEventListener('change', keep, true);
      return [...edits].map(([id, edit]) => ({ id, ...edit }));
    },
  };
  const afterFrame = (then) => requestAnimationFrame(() => setTimeout(then));
  /**
   * The templates of `stage` replaced by their contents. dist/'s stage 2 leaves an empty template
   * (data-part="N") where its part belongs and the part itself at the document's end
   * (prerender.mjs deferToEnd): that one's contents go in its place.
   */
  const unfold = (stage) => {
    for (const t of document.querySelectorAll(`template[data-deferred="${stage}"]`)) {
      const n = t.getAttribute('data-part');
      const part = n === null ? t : document.querySelector(`template[data-part="${n}"]:not([data-deferred])`);
      if (!part) continue; // none in the document (the build refuses such a page): its place stays empty
      t.replaceWith(part.content);
      if (part !== t) part.remove();
    }
  };
  window.trainmemUnfold = unfold;
  let unfolded = false;
  /** Every stage in place, then 'trainmem:unfolded' (once). */
  const unfoldAll = () => {
    if (unfolded) return;
    unfolded = true;
    unfold(1);
    unfold(2);
    document.documentElement.setAttribute('data-unfolded', '');
    document.dispatchEvent(new Event('trainmem:unfolded'));
  };
  // A link's page puts stage 2 in place when main.js asks, once the link's answer is painted (or
  // when the page cannot start): until then the main thread is the answer's.
  window.trainmemUnfoldAll = unfoldAll;
  const link = document.documentElement.hasAttribute('data-link');
  document.addEventListener('DOMContentLoaded', () => {
    if (!document.querySelector('template[data-deferred]')) unfoldAll(); // web/: nothing waits
    afterFrame(() => {
      unfold(1);
      if (!link) afterFrame(unfoldAll);
    });
  });
}
