// The search page: one box for words or LaTeX, a live preview of LaTeX, results as cards.
import { api, element, formula, light, wikidata } from "./common.js";

const form = document.getElementById("search");
const input = document.getElementById("q");
const preview = document.getElementById("preview");
const status = document.getElementById("status");
const results = document.getElementById("results");
const symbols = document.getElementById("symbols");

// A query reads as LaTeX when it has a backslash or a formula's marks and hardly any words
export function guessKind(query) {
  const words = query.replace(/\\[a-zA-Z]+/g, " ").match(/[A-Za-z]{4,}/g) || [];
  if (query.includes("\\")) return "latex";
  if (/[=^_{}]/.test(query) && words.length < 2) return "latex";
  return "text";
}

function kindOf(query) {
  const chosen = form.querySelector("input[name=kind]:checked").value;
  return chosen === "auto" ? guessKind(query) : chosen;
}

let previewTimer = null;
let previewed = "";
async function showPreview() {
  const query = input.value.trim();
  if (!query || kindOf(query) !== "latex") {
    preview.replaceChildren();
    previewed = "";
    return;
  }
  if (query === previewed) return;
  previewed = query;
  try {
    const shown = await api("/api/preview", { latex: query });
    if (input.value.trim() !== query) return;
    preview.replaceChildren(element("span", { class: "label", text: "reads as" }), formula(shown.display_mathml, "formula inline"));
    preview.classList.remove("wrong");
  } catch (error) {
    if (input.value.trim() !== query) return;
    const where = Number.isInteger(error.position) ? ` (at character ${error.position + 1}: “${query.slice(error.position, error.position + 12)}”)` : "";
    preview.replaceChildren(element("span", { text: `${error.message}${where}` }));
    preview.classList.add("wrong");
  }
}

function badge(hit) {
  if (hit.trained_on === true) return element("span", { class: "badge trained", title: "the serving models were trained on this item", text: "trained on" });
  if (hit.trained_on === false) return element("span", { class: "badge held-out", title: "the serving models never saw this item", text: "held out" });
  return null;
}

function channels(hit) {
  const list = element("p", { class: "channels" }, "found by ");
  for (const [name, found] of Object.entries(hit.channels)) {
    list.append(element("span", { class: `channel ${name}`, title: `score ${found.score}`, text: `${name} #${found.rank}${found.exact ? " · exact" : ""}` }), " ");
  }
  return list;
}

function card(hit) {
  const box = formula(hit.display_mathml);
  const concepts = element("ul", { class: "concepts" });
  for (const concept of hit.concepts) {
    const chip = element("li", { tabindex: 0, "data-symbol": concept.symbol, text: concept.symbol ? `${concept.label} (${concept.symbol})` : concept.label || concept.qid });
    for (const [event, on] of [["mouseenter", true], ["mouseleave", false], ["focus", true], ["blur", false]]) {
      chip.addEventListener(event, () => light(box, concept.symbol, on));
    }
    concepts.append(chip);
  }
  return element(
    "li", { class: "hit" },
    element("article", {},
      element("header", {},
        element("a", { href: `/item/${hit.qid}`, class: "title", text: hit.label || hit.qid }), " ",
        element("span", { class: "qid", text: hit.qid }), " ", badge(hit)),
      box,
      hit.description ? element("p", { class: "description", text: hit.description }) : null,
      concepts,
      channels(hit),
      wikidata(hit.qid)));
}

function explain(result) {
  symbols.replaceChildren();
  if (!result.symbols || !result.symbols.length) {
    symbols.hidden = true;
    return;
  }
  symbols.hidden = false;
  symbols.append(element("h2", { text: "What the query's symbols most likely denote" }));
  const list = element("dl");
  for (const symbol of result.symbols) {
    list.append(element("dt", { text: symbol.identifier }));
    const readings = symbol.readings.length
      ? symbol.readings.map((r) => `${r.label || r.concept} (${Math.round(r.score * 100)}%)`).join(" · ")
      : "no annotation of it in the items found or the corpus";
    list.append(element("dd", { text: readings }));
  }
  symbols.append(list);
}

async function search(push = true) {
  const query = input.value.trim();
  if (!query) return;
  const kind = kindOf(query);
  status.textContent = "Searching…";
  const started = performance.now();
  try {
    const result = await api("/api/search", { q: query, kind, top: 20 });
    results.replaceChildren(...result.hits.map(card));
    explain(result);
    status.textContent = `${result.hits.length} items for the ${kind === "text" ? "words" : "formula"} “${query}” (${Math.round(performance.now() - started)} ms; channels: ${result.channels.join(", ")})`;
    if (push) history.replaceState(null, "", `/?q=${encodeURIComponent(query)}&kind=${kind}`);
  } catch (error) {
    results.replaceChildren();
    symbols.hidden = true;
    status.textContent = `The search cannot run: ${error.message}`;
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
input.addEventListener("input", () => {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(showPreview, 150);
});
for (const radio of form.querySelectorAll("input[name=kind]")) radio.addEventListener("change", showPreview);
document.addEventListener("keydown", (event) => {
  if (event.key === "/" && document.activeElement !== input) {
    event.preventDefault();
    input.focus();
    input.select();
  }
});

const given = new URLSearchParams(window.location.search);
if (given.get("q")) {
  input.value = given.get("q");
  const kind = given.get("kind");
  if (kind === "text" || kind === "latex") form.querySelector(`input[value=${kind}]`).checked = true;
  showPreview();
  search(false);
}
