// A classic script in <head>, run before the first paint: a page opened with a link (any fragment)
// marks the document, so that dist/'s prerendered fresh-page answer (web/scripts/prerender.mjs) is
// not shown for it while main.js starts; the stylesheet hides it then.
if (location.hash.length > 1) document.documentElement.setAttribute('data-link', '');
