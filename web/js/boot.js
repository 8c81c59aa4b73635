// A classic script in <head>, run before the first paint.
// - A page opened with a link (any fragment) marks the document, so that dist/'s prerendered
//   fresh-page answer (web/scripts/prerender.mjs) is not shown for it while main.js starts; the
//   stylesheet hides it then.
// - dist/'s first document lays out the answer and little else: the rest of the page waits in
//   <template data-deferred="N"> elements, whose text and controls a first frame would otherwise lay
//   out before it could paint the headline. Each stage is put in place in the task after a frame,
//   once the document is parsed: 1, the result cards below the headline (the breakdown table
//   first); 2, the inputs' contents, the explanation and the embed dialog. main.js waits for
//   'trainmem:unfolded' (web/ has no templates: there it comes once the document is parsed).
if (location.hash.length > 1) document.documentElement.setAttribute('data-link', '');
{ // a block: a classic script's top-level names would be the page's globals
  const afterFrame = (then) => requestAnimationFrame(() => setTimeout(then));
  const unfold = (stage) => {
    for (const t of document.querySelectorAll(`template[data-deferred="${stage}"]`)) t.replaceWith(t.content);
  };
  const done = () => {
    document.documentElement.setAttribute('data-unfolded', '');
    document.dispatchEvent(new Event('trainmem:unfolded'));
  };
  document.addEventListener('DOMContentLoaded', () => {
    if (!document.querySelector('template[data-deferred]')) return done();
    afterFrame(() => {
      unfold(1);
      afterFrame(() => {
        unfold(2);
        done();
      });
    });
  });
}
