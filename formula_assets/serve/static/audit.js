// The editors' review queue: findings with their formula (the symbol in question lit),
// the evidence, links to the item; ticked findings download as a QuickStatements batch.
import { api, element, formula, light, wikidata } from "./common.js";

const list = document.getElementById("findings");
const status = document.getElementById("status");
const download = document.getElementById("download");
const more = document.getElementById("more");
const filter = document.getElementById("filter");
const kindSelect = document.getElementById("kind");
const query = document.getElementById("q");
const chosen = new Map(); // finding id → its QuickStatements lines
let offset = 0;

function updateDownload() {
  download.disabled = chosen.size === 0;
  download.textContent = `Download QuickStatements (${chosen.size})`;
}

function entry(finding, index) {
  const id = `${finding.qid}:${finding.kind || ""}:${finding.symbol || ""}:${index}`;
  const box = formula(finding.display_mathml);
  for (const symbol of finding.symbols || []) light(box, symbol, true);
  const lines = finding.quickstatements || [];
  const tick = element("input", { type: "checkbox", id: `f-${id}`, disabled: lines.length ? null : true, "aria-label": `confirm the finding on ${finding.label || finding.qid}` });
  tick.addEventListener("change", () => {
    if (tick.checked) chosen.set(id, lines);
    else chosen.delete(id);
    updateDownload();
  });
  return element("li", { class: "finding" },
    element("header", {}, tick, " ",
      element("a", { href: `/item/${finding.qid}`, class: "title", text: finding.label || finding.qid }), " ",
      finding.kind ? element("span", { class: "badge", text: finding.kind.replaceAll("_", " ") }) : null, " ",
      wikidata(finding.qid)),
    box,
    element("p", { class: "evidence", text: finding.finding || "" }),
    (finding.evidence || []).length
      ? element("p", { class: "muted" }, "Evidence: ", ...finding.evidence.slice(0, 5).flatMap((qid, i) => [i ? ", " : "", element("a", { href: `/item/${qid}`, text: qid })]))
      : null,
    lines.length ? element("pre", { class: "qs", text: lines.join("\n") }) : element("p", { class: "muted", text: "Nothing to add automatically: an edit by hand." }));
}

async function load(reset) {
  if (reset) {
    offset = 0;
    list.replaceChildren();
  }
  status.textContent = "Loading…";
  try {
    const page = await api("/api/audit", { kind: kindSelect.value, q: query.value.trim(), limit: 25, offset });
    page.findings.forEach((finding, i) => list.append(entry(finding, offset + i)));
    offset += page.findings.length;
    for (const kind of page.kinds || []) {
      if (![...kindSelect.options].some((o) => o.value === kind)) kindSelect.append(element("option", { value: kind, text: kind.replaceAll("_", " ") }));
    }
    more.hidden = offset >= page.total;
    status.textContent = `${offset} of ${page.total} findings`;
  } catch (error) {
    status.textContent = `The audit cannot be shown: ${error.message}`;
  }
}

download.addEventListener("click", () => {
  const text = [...chosen.values()].flat().join("\n") + "\n";
  const link = element("a", { href: URL.createObjectURL(new Blob([text], { type: "text/plain" })), download: "quickstatements.txt" });
  document.body.append(link);
  link.click();
  link.remove();
});
more.addEventListener("click", () => load(false));
filter.addEventListener("submit", (event) => {
  event.preventDefault();
  load(true);
});

load(true);
