/**
 * The column mapping of the console's CSV imports (contacts, suppressions): the preview of the
 * first rows with a <select> over each column. The upload and the mapping's parsing are
 * ../csv-mapping.ts.
 */
import type { MappingTarget, Preview } from "../csv-mapping.js";
import { html, type Html } from "./html.js";

/**
 * The preview table with a <select> over each column (named `col.<index>`): `guess` gives each
 * header's default target ("" to leave the column out).
 */
export function mappingTableView(preview: Preview, targets: MappingTarget[], guess: (header: string) => string): Html {
  const selects = preview.header.map((h, i) => {
    const chosen = guess(h);
    const options = [{ value: "", label: "Leave out" }, ...targets].map((t) =>
      html`<option value="${t.value}"${t.value === chosen ? " selected" : ""}>${t.label}</option>`);
    return html`<th scope="col"><span>${h || `Column ${i + 1}`}</span><br><label class="sr-only" for="col-${i}">Import column ${h || String(i + 1)} as</label><select id="col-${i}" name="col.${i}">${options}</select></th>`;
  });
  const rows = preview.rows.map((r) => html`<tr>${preview.header.map((_, i) => html`<td>${r[i] ?? ""}</td>`)}</tr>`);
  return html`<div class="table-wrap"><table class="data"><caption>The first ${preview.rows.length} row${preview.rows.length === 1 ? "" : "s"} of the file; choose what each column is</caption>
<thead><tr>${selects}</tr></thead><tbody>${rows.length ? rows : html`<tr><td colspan="${preview.header.length}" class="muted">No rows after the header.</td></tr>`}</tbody></table></div>`;
}
