/**
 * The pre-send check in the console (DESIGN §10.5), the views: the panel beside a draft's
 * preview and the page that asks again before scheduling despite errors. The handlers (the
 * check's call, the schedule's hook) are pages/broadcast-check.ts.
 */
import type { Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { checkJson } from "@mailroom/http/pre-send-check-schema.js";
import { consoleUrl, statusBadge } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

export type Check = ReturnType<typeof checkJson>;
type Finding = Check["errors"][number];

const badge = (text: string, tone: Parameters<typeof statusBadge>[1]) => trusted(statusBadge(text, tone));
const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** One line per finding: its level, what is wrong, and where (a link, an image, the subject …). */
function findingsView(findings: Finding[]): Html {
  return html`<ul class="check-findings">${findings.map((f) =>
    html`<li data-finding="${f.code}" data-level="${f.level}">${badge(f.level === "error" ? "Error" : "Warning", f.level === "error" ? "bad" : "warn")} ${f.message} <span class="muted">— in <code data-where>${f.where}</code></span></li>`)}</ul>`;
}

function summaryView(c: Check): Html {
  const spam = "score" in c.spam
    ? html`SpamAssassin: <strong data-spam-score>${c.spam.score}</strong> (spam from ${c.spam.required})${c.spam.rules.length ? html` · <details style="display:inline"><summary>rules</summary><ul>${c.spam.rules.map((r) => html`<li><code>${r.name}</code> ${r.score}: ${r.description}</li>`)}</ul></details>` : ""}`
    : html`SpamAssassin: not scored — ${c.spam.skipped}`;
  const broken = c.links.filter((l) => l.status >= 400 || (l.status === 0 && !l.refused)).length;
  return html`<p class="muted" data-check-summary>${spam}<br>HTML ${(c.size.htmlBytes / 1024).toFixed(1)} KB${c.size.clipped ? " (Gmail clips it)" : ""} · ${plural(c.links.length, "link")} checked${broken ? `, ${broken} broken` : ""} · ${plural(c.images.length, "image")} · plain text ${c.text.present ? (c.text.generated ? "generated from the HTML" : "written") : "missing"} · unsubscribe link ${c.unsubscribe.found ? "found" : "missing"}</p>`;
}

/** What the panel shows: not asked yet, asked and the check failed, or the check's result. */
export type CheckPanel = { asked: false } | { asked: true; ok: false; message: string } | { asked: true; ok: true; check: Check };

/** The panel of a draft's page: the check's findings when asked for (`check=1`), else a button that asks (keeping the preview's contact). */
export function checkPanelView(b: Broadcast, contact: string, panel: CheckPanel): Html {
  const button = html`<form method="get" action="${consoleUrl(`/broadcasts/${b.id}`)}#check" class="row">${contact ? html`<input type="hidden" name="contact" value="${contact}">` : ""}<input type="hidden" name="check" value="1">
<button type="submit" class="secondary">${panel.asked ? "Check again" : "Run the pre-send check"}</button></form>`;
  const head = html`<section aria-labelledby="check-h" id="check" class="card"><h3 id="check-h">Pre-send check</h3>`;
  if (!panel.asked) {
    return html`${head}<p class="muted">Renders the saved draft for the audience's first contact, fetches every link, looks at images, size, text and the unsubscribe link, and asks SpamAssassin when the server has it.</p>${button}</section>`;
  }
  if (!panel.ok) return html`${head}<p class="flash error" role="alert">The check could not be made: ${panel.message}</p>${button}</section>`;
  const { check } = panel;
  const findings = [...check.errors, ...check.warnings];
  const warnings = check.warnings.length ? badge(plural(check.warnings.length, "warning"), "warn") : "";
  const verdict = check.errors.length
    ? html`<p role="status" data-check-verdict="errors">${badge(plural(check.errors.length, "error"), "bad")} ${warnings} Scheduling will ask you to confirm while errors remain.</p>`
    : html`<p role="status" data-check-verdict="${check.warnings.length ? "warnings" : "clean"}">${check.warnings.length ? warnings : badge("No findings", "ok")}</p>`;
  return html`${head}${verdict}${findings.length ? findingsView(findings) : ""}${summaryView(check)}${button}</section>`;
}

/**
 * The page that lists the check's errors and asks again: its form carries the schedule form's
 * choices (`carried`, name → value), the confirmation field and `csrf` (the hidden input's markup).
 */
export function confirmScheduleView(b: Broadcast, errors: Finding[], carried: Array<[string, string]>, confirmField: string, csrf: string): Html {
  const count = plural(errors.length, "error");
  return html`<h1>Schedule ${b.name || b.id} with ${count}?</h1>
<p>The pre-send check found ${errors.length === 1 ? "an error" : "errors"} in what your audience would get:</p>
${findingsView(errors)}
<form method="post" action="${consoleUrl(`/broadcasts/${b.id}/schedule`)}" class="card" data-confirm="Schedule it with ${count}?">${trusted(csrf)}${carried.map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<input type="hidden" name="${confirmField}" value="1">
<div class="actions"><button type="submit" class="danger">Schedule anyway</button> <a class="button secondary" href="${consoleUrl(`/broadcasts/${b.id}`, { check: "1" })}#check">Fix them first</a></div></form>`;
}
