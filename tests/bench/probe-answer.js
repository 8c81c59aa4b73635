// The least any page can do to show a link's answer through the estimator module (issue 31's
// bound, tests/bench/page-bench.mjs): a document with no text of its own, whose head starts the
// module's and the build's data's fetch (as js/boot.js does), and this script, bundled alone: the
// module instantiated, the Engine made, the link restored and estimated (the path the page's first
// answer and the embed take: link-config.js), the headline's figure written as the only text.
// Its first contentful paint is then the first frame showing the answer; no page built on this
// module answers a link sooner on the same machine. The mark is when the live estimator has
// answered: no page's inputs can respond before it.
import { createEngine } from '../../web/js/engine.js';
import { estimateView, restoreLink, splitViewOptions } from '../../web/js/link-config.js';
import { formatBytes } from '../../web/js/format.js';

const engine = await createEngine();
const link = restoreLink(splitViewOptions(location.hash).state, engine);
const { headline } = estimateView(engine, link);
performance.mark('probe:answer');
document.getElementById('answer').textContent = formatBytes(headline?.bytes, link.unit);
