// An item's page: its formula, each symbol's concept (hover or focus one: its symbol lights
// up in the formula), similar formulae, the link to Wikidata.
import { api, element, formula, light, wikidata } from "./common.js";

const main = document.getElementById("item");
const qid = decodeURIComponent(window.location.pathname.split("/").pop());

async function show() {
  try {
    const item = await api(`/api/items/${encodeURIComponent(qid)}`);
    document.title = `${item.label || item.qid} · formula_assets`;
    const box = formula(item.display_mathml, "formula large");
    const concepts = element("ul", { class: "concept-list" });
    for (const concept of item.concepts) {
      const row = element("li", { tabindex: 0, "data-symbol": concept.symbol },
        concept.symbol_display_mathml ? formula(concept.symbol_display_mathml, "formula inline") : element("span", { class: "muted", text: "(no symbol)" }),
        " ", element("a", { href: concept.url, class: "external", text: concept.label || concept.qid }),
        concept.description ? element("span", { class: "muted", text: ` — ${concept.description}` }) : null);
      for (const [event, on] of [["mouseenter", true], ["mouseleave", false], ["focusin", true], ["focusout", false]]) {
        row.addEventListener(event, () => light(box, concept.symbol, on));
      }
      concepts.append(row);
    }
    const similar = element("ol", { class: "similar" });
    for (const other of item.similar) {
      similar.append(element("li", {}, element("a", { href: `/item/${other.qid}`, text: other.label || other.qid }), formula(other.display_mathml, "formula inline")));
    }
    const trained = item.trained_on === true ? "The serving models were trained on this item." : item.trained_on === false ? "The serving models never saw this item (held out)." : "";
    main.replaceChildren(...[
      element("h1", { text: item.label || item.qid }),
      element("p", { class: "description", text: item.description || "" }),
      item.aliases.length ? element("p", { class: "muted", text: `Also known as: ${item.aliases.join(", ")}` }) : null,
      box,
      item.other_formulae.length ? element("h2", { text: "Further defining formulae" }) : null,
      item.other_formulae.length ? element("ul", { class: "other-formulae" }, ...item.other_formulae.map((other) => element("li", {}, formula(other.display_mathml)))) : null,
      element("p", {}, wikidata(item.qid), trained ? ` · ${trained}` : ""),
      element("h2", { text: "Symbols and their concepts" }),
      item.concepts.length ? concepts : element("p", { class: "muted", text: "No concept is annotated on this formula." }),
      element("h2", { text: "Similar formulae" }),
      similar].filter((part) => part !== null)); // replaceChildren writes a null as "null"
  } catch (error) {
    main.replaceChildren(element("p", { role: "status", text: `This item cannot be shown: ${error.message}` }));
  }
}

show();
