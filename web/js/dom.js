// Each view and panel names the elements it fills by their ids in the page.

/** {key: id} to {key: element}; null where the page has no such element. */
export const elementsById = (ids) => Object.fromEntries(Object.entries(ids).map(([key, id]) => [key, document.getElementById(id)]));
