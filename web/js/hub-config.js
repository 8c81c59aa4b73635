// A model's config.json from the Hugging Face Hub (or a mirror), for an import whose model is not a
// preset (issue 32, item 2). One GET the user starts with the button, never on its own:
//   {base}/{model id}/resolve/main/config.json
// the address huggingface_hub's hf_hub_download builds for a file at revision "main" (its
// constants.HUGGINGFACE_CO_URL_TEMPLATE "{endpoint}/{repo_id}/resolve/{revision}/{filename}").
// The page's Content-Security-Policy (index.html, connect-src) decides which bases a browser lets
// the page reach; allowedByCsp checks a base against it first, so a blocked base gets a message
// that says so instead of a bare network error.

export const DEFAULT_HUB = 'https://huggingface.co';
export const HUB_STORAGE_KEY = 'trainmem.hubBase';

/** "Qwen/Qwen2.5-14B" or "gpt2": a Hub repository id (the Hub's own rule: letters, digits, -, _, .). */
const MODEL_ID = /^(?:[\w.-]+\/)?[\w.-]+$/;

/**
 * The base as a URL without a trailing slash, or {error}. Only http(s): a file: or data: base
 * would be no Hub.
 */
export function hubBase(text) {
  const raw = String(text ?? '').trim() || DEFAULT_HUB;
  let url;
  try {
    url = new URL(raw);
  } catch {
    return { error: `Hub address: "${raw}" is not a URL (like ${DEFAULT_HUB})` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { error: `Hub address: must start with https:// or http://, got "${raw}"` };
  if (url.search || url.hash) return { error: `Hub address: no query or fragment, got "${raw}"` };
  return { base: url.href.replace(/\/+$/, '') };
}

/** The config.json address of `modelId` under `base`, or {error} naming the field. */
export function hubConfigUrl(base, modelId) {
  const id = String(modelId ?? '').trim();
  if (!id) return { error: 'Model id: give the model\'s repository on the Hub, like Qwen/Qwen2.5-14B' };
  if (!MODEL_ID.test(id) || id.split('/').some((part) => part === '.' || part === '..')) {
    return { error: `Model id: "${id}" is not a Hub repository id (organisation/name, letters, digits, "-", "_" and ".")` };
  }
  const b = hubBase(base);
  if (b.error) return b;
  return { url: `${b.base}/${id.split('/').map(encodeURIComponent).join('/')}/resolve/main/config.json` };
}

/** The sources of a CSP directive (connect-src, else default-src) in a policy's text; null: no policy. */
export function connectSources(policy) {
  if (!policy) return null;
  const directives = new Map(policy.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map(([k, ...v]) => [k.toLowerCase(), v]));
  return directives.get('connect-src') ?? directives.get('default-src') ?? null;
}

/**
 * Whether a policy's connect-src lets a page at `pageOrigin` fetch `url`: 'self', a scheme
 * ("https:"), a host source with an optional scheme, "*." host wildcard and port or ":*"
 * (CSP Level 3, "Does url match source list"; enough for the sources index.html lists).
 */
export function allowedByCsp(sources, url, pageOrigin) {
  if (!sources) return true;
  const target = new URL(url);
  const defaultPort = (scheme) => ({ 'http:': '80', 'https:': '443' }[scheme] ?? '');
  return sources.some((source) => {
    const s = source.toLowerCase();
    if (s === "'none'") return false;
    if (s === "'self'") return target.origin === pageOrigin || (new URL(pageOrigin).protocol === 'http:' && target.protocol === 'https:' && target.host === new URL(pageOrigin).host);
    if (s === '*') return target.protocol === 'http:' || target.protocol === 'https:';
    if (/^[a-z][a-z0-9+.-]*:$/.test(s)) return target.protocol === s || (s === 'http:' && target.protocol === 'https:');
    const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*\.)?([^:/]+)(?::(\d+|\*))?(\/.*)?$/.exec(s);
    if (!m) return false;
    const [, scheme, wildcard, host, port] = m;
    if (scheme && `${scheme}:` !== target.protocol && !(scheme === 'http' && target.protocol === 'https:')) return false;
    if (wildcard ? !target.hostname.endsWith(`.${host}`) : target.hostname !== host) return false;
    const targetPort = target.port || defaultPort(target.protocol);
    if (port === '*') return true;
    return (port ?? defaultPort(scheme ? `${scheme}:` : target.protocol)) === targetPort;
  });
}

/** The page's own policy text (index.html's meta tag), or null. */
export function pagePolicy(doc = document) {
  return doc.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content') ?? null;
}

/**
 * Fetches and checks a config.json. {ok: true, text, url} or {ok: false, message}: every failure
 * a sentence the user can act on. `fetchImpl` is the browser's fetch (a test may pass its own).
 *
 * The Hub answers 401, not 404, for a missing repository, a private one and a gated one when the
 * request carries no token (huggingface/huggingface_hub src/huggingface_hub/utils/_http.py @
 * 01dd37b82d5a00b2f44932e49e37ae7afdf2c1d6, hf_raise_for_status: "401 is misleading as it is
 * returned for: private and gated repos if user is not authenticated, missing repos"); its
 * X-Error-Code header (GatedRepo, RepoNotFound, EntryNotFound, RevisionNotFound) tells them
 * apart when the response lets the page read it.
 */
export async function fetchHubConfig(base, modelId, { fetchImpl = fetch, policy = pagePolicy(), pageOrigin = location.origin } = {}) {
  const address = hubConfigUrl(base, modelId);
  if (address.error) return { ok: false, message: address.error };
  const { url } = address;
  const origin = new URL(url).origin;
  if (!allowedByCsp(connectSources(policy), url, pageOrigin)) {
    return {
      ok: false,
      message: `This page may not connect to ${origin}: its Content-Security-Policy (connect-src) allows ${connectSources(policy).join(' ')}. ` +
        'Open config.json at that address yourself and paste or upload it, or serve the page with that host added to connect-src in index.html.',
    };
  }
  let response;
  try {
    response = await fetchImpl(url, { credentials: 'omit', redirect: 'follow', cache: 'no-cache' });
  } catch (error) {
    return {
      ok: false,
      message: `No answer from ${origin} (${error.message}): offline, the address is wrong, or the server does not allow this page to read it (CORS). ` +
        `Open ${url} yourself and paste or upload the file.`,
    };
  }
  const code = response.headers.get('X-Error-Code') ?? '';
  const id = String(modelId).trim();
  if (code === 'GatedRepo' || (response.status === 403 && !code)) {
    return { ok: false, message: `${id} is a gated model (the Hub answered ${response.status}): accept its licence on the Hub, download config.json while signed in, and paste or upload it here.` };
  }
  if (response.status === 401) {
    return {
      ok: false,
      message: `The Hub answered 401 for ${id}: the model is gated or private (it needs you signed in: accept its licence on the Hub, download config.json and paste or upload it), or no such model exists (check the id, organisation/name).`,
    };
  }
  if (response.status === 404 || code === 'RepoNotFound' || code === 'EntryNotFound') {
    return { ok: false, message: `Not found (${response.status}): ${code === 'EntryNotFound' ? `${id} has no config.json on its main branch` : `no model ${id} at ${origin}`}. Check the id (organisation/name, as in the model's Hub address).` };
  }
  if (!response.ok) return { ok: false, message: `${origin} answered ${response.status} ${response.statusText} for ${url}.` };
  const text = await response.text();
  let tree;
  try {
    tree = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `What ${url} returned is not JSON (${error.message.split('\n')[0]}): is the Hub address right?` };
  }
  if (!tree || typeof tree !== 'object' || Array.isArray(tree)) return { ok: false, message: `What ${url} returned is not a config.json (a JSON object).` };
  return { ok: true, text, url, modelType: typeof tree.model_type === 'string' ? tree.model_type : '' };
}

/** The base the user last fetched from (localStorage), or the default. */
export function rememberedBase(storage = globalThis.localStorage) {
  try {
    return storage?.getItem(HUB_STORAGE_KEY) || DEFAULT_HUB;
  } catch { // storage refused (a sandboxed frame, privacy settings)
    return DEFAULT_HUB;
  }
}

export function rememberBase(base, storage = globalThis.localStorage) {
  try {
    if (!base || base === DEFAULT_HUB) storage?.removeItem(HUB_STORAGE_KEY);
    else storage?.setItem(HUB_STORAGE_KEY, base);
  } catch { /* not remembered: the field still holds it */ }
}
