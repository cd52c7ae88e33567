// What every page shares: fetching the JSON API, building elements, showing formulae.

export async function api(path, params = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw Object.assign(new Error(body.error || `HTTP ${response.status}`), body);
  return body;
}

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// Formulae come from the service already rebuilt from MathML elements only (syntax/display.py)
export function formula(displayMathml, className = "formula") {
  const box = element("div", { class: className });
  if (displayMathml) box.innerHTML = displayMathml;
  else box.append(element("span", { class: "muted", text: "(no formula to show)" }));
  return box;
}

// Light up the elements of `box` that are the identifier `symbol` (data-symbol)
export function light(box, symbol, on) {
  if (!symbol) return;
  for (const node of box.querySelectorAll("[data-symbol]")) {
    if (node.getAttribute("data-symbol") === symbol) node.classList.toggle("lit", on);
  }
}

export function wikidata(qid) {
  return element("a", { href: `https://www.wikidata.org/wiki/${qid}`, class: "external", text: `Wikidata ${qid}` });
}
