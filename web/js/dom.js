// Each view and panel names the elements it fills by their ids in the page.

/** {key: id} to {key: element}; null where the page has no such element. */
export const elementsById = (ids) => Object.fromEntries(Object.entries(ids).map(([key, id]) => [key, document.getElementById(id)]));

/** Text made safe for markup built as a string (element content and quoted attribute values). */
export const escapeHtml = (text) => String(text).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
