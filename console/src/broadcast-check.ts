/**
 * The pre-send check in the console (DESIGN §10.5): a panel beside a draft's preview with one
 * line per finding and where it is, run on demand (`?check=1`: it fetches every link and asks
 * SpamAssassin, seconds rather than milliseconds), and the schedule's confirmation while the
 * check finds errors: scheduling shows them and asks again before anything is scheduled.
 * broadcasts.ts calls the two hooks below; the check itself is the broadcast unit's.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { PreSendCheck } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { checkJson } from "@mailroom/http/pre-send-check-schema.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, statusBadge } from "./layout.js";
import { sessionOf } from "./session.js";

type Check = ReturnType<typeof checkJson>;
type Finding = Check["errors"][number];

/** The field a schedule form carries once its sender saw the errors and confirmed. */
export const CONFIRM_FIELD = "confirmCheckErrors";
/** What a schedule form posts, carried over to the confirmation's form. */
const SCHEDULE_FIELDS = ["when", "sendAt", "deliveryMethod"];

const field = (body: unknown, name: string): string => {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) ? String(v[0] ?? "") : "";
};

async function runCheck(deps: ConsoleDeps, request: FastifyRequest, id: string): Promise<{ ok: true; check: Check } | { ok: false; message: string }> {
  try {
    const res = await deps.clients.check.checkBroadcast({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    return { ok: true, check: checkJson(res.check as PreSendCheck) };
  } catch (err) {
    return { ok: false, message: bodyFromError(err).message };
  }
}

/** One line per finding: its level, what is wrong, and where (a link, an image, the subject …). */
function findingsHtml(findings: Finding[]): string {
  return `<ul class="check-findings">${findings
    .map((f) => `<li data-finding="${escapeHtml(f.code)}" data-level="${f.level}">${statusBadge(f.level === "error" ? "Error" : "Warning", f.level === "error" ? "bad" : "warn")} ${escapeHtml(f.message)} <span class="muted">— in <code data-where>${escapeHtml(f.where)}</code></span></li>`)
    .join("")}</ul>`;
}

function summaryHtml(c: Check): string {
  const spam = "score" in c.spam
    ? `SpamAssassin: <strong data-spam-score>${c.spam.score}</strong> (spam from ${c.spam.required})${c.spam.rules.length ? ` · <details style="display:inline"><summary>rules</summary><ul>${c.spam.rules.map((r) => `<li><code>${escapeHtml(r.name)}</code> ${r.score}: ${escapeHtml(r.description)}</li>`).join("")}</ul></details>` : ""}`
    : `SpamAssassin: not scored — ${escapeHtml(c.spam.skipped)}`;
  const broken = c.links.filter((l) => l.status >= 400 || (l.status === 0 && !l.refused)).length;
  return `<p class="muted" data-check-summary>${spam}<br>HTML ${(c.size.htmlBytes / 1024).toFixed(1)} KB${c.size.clipped ? " (Gmail clips it)" : ""} · ${c.links.length} link${c.links.length === 1 ? "" : "s"} checked${broken ? `, ${broken} broken` : ""} · ${c.images.length} image${c.images.length === 1 ? "" : "s"} · plain text ${c.text.present ? (c.text.generated ? "generated from the HTML" : "written") : "missing"} · unsubscribe link ${c.unsubscribe.found ? "found" : "missing"}</p>`;
}

/**
 * The panel of a draft's page: the check's findings when the page was asked for with
 * `check=1`, else a button that asks for it (keeping the preview's contact).
 */
export async function checkPanelHtml(deps: ConsoleDeps, request: FastifyRequest, b: Broadcast, contact: string): Promise<string> {
  const asked = field(request.query, "check") === "1";
  const button = `<form method="get" action="${consoleUrl(`/broadcasts/${b.id}`)}#check" class="row">${contact ? `<input type="hidden" name="contact" value="${escapeHtml(contact)}">` : ""}<input type="hidden" name="check" value="1">
<button type="submit" class="secondary">${asked ? "Check again" : "Run the pre-send check"}</button></form>`;
  const head = `<section aria-labelledby="check-h" id="check" class="card"><h3 id="check-h">Pre-send check</h3>`;
  if (!asked) {
    return `${head}<p class="muted">Renders the saved draft for the audience's first contact, fetches every link, looks at images, size, text and the unsubscribe link, and asks SpamAssassin when the server has it.</p>${button}</section>`;
  }
  const run = await runCheck(deps, request, b.id);
  if (!run.ok) return `${head}<p class="flash error" role="alert">The check could not be made: ${escapeHtml(run.message)}</p>${button}</section>`;
  const { check } = run;
  const findings = [...check.errors, ...check.warnings];
  const verdict = check.errors.length
    ? `<p role="status" data-check-verdict="errors">${statusBadge(`${check.errors.length} error${check.errors.length === 1 ? "" : "s"}`, "bad")} ${check.warnings.length ? statusBadge(`${check.warnings.length} warning${check.warnings.length === 1 ? "" : "s"}`, "warn") : ""} Scheduling will ask you to confirm while errors remain.</p>`
    : `<p role="status" data-check-verdict="${check.warnings.length ? "warnings" : "clean"}">${check.warnings.length ? statusBadge(`${check.warnings.length} warning${check.warnings.length === 1 ? "" : "s"}`, "warn") : statusBadge("No findings", "ok")}</p>`;
  return `${head}${verdict}${findings.length ? findingsHtml(findings) : ""}${summaryHtml(check)}${button}</section>`;
}

/**
 * The schedule form's hook: when the check finds errors and the sender has not confirmed yet,
 * answers a page that lists them and asks again (its form carries the same choices and the
 * confirmation) and says true; else false and scheduling goes on. A check that cannot run holds nothing.
 */
export async function confirmScheduleDespiteErrors(deps: ConsoleDeps, request: FastifyRequest, reply: FastifyReply, b: Broadcast): Promise<boolean> {
  if (field(request.body, CONFIRM_FIELD) === "1") return false;
  const run = await runCheck(deps, request, b.id);
  if (!run.ok || run.check.errors.length === 0) return false;
  const session = sessionOf(request);
  const errors = run.check.errors;
  const carried = SCHEDULE_FIELDS.map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(field(request.body, name))}">`).join("");
  const body = `<h1>Schedule ${escapeHtml(b.name || b.id)} with ${errors.length} error${errors.length === 1 ? "" : "s"}?</h1>
<p>The pre-send check found ${errors.length === 1 ? "an error" : "errors"} in what your audience would get:</p>
${findingsHtml(errors)}
<form method="post" action="${consoleUrl(`/broadcasts/${b.id}/schedule`)}" class="card" data-confirm="Schedule it with ${errors.length} error${errors.length === 1 ? "" : "s"}?">${csrfField(session)}${carried}<input type="hidden" name="${CONFIRM_FIELD}" value="1">
<div class="actions"><button type="submit" class="danger">Schedule anyway</button> <a class="button secondary" href="${consoleUrl(`/broadcasts/${b.id}`, { check: "1" })}#check">Fix them first</a></div></form>`;
  // A boolean, not the reply: a FastifyReply is thenable, and awaiting it would wait for the answer to finish.
  reply.code(200).type("text/html; charset=utf-8").send(consolePage({ title: "Check found errors", session, active: "broadcasts", body }));
  return true;
}
