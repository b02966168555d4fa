/**
 * Automation runs in the console: the recent runs of one automation (its page), and the
 * section of a contact's page that lists the runs the contact is in, each step with its times
 * and the email a send step sent.
 *
 *   runsTable(runs, contacts, captionId)          one automation's runs
 *   contactAutomationsSection(deps, request, id)  the contact page's section body (never throws:
 *                                                 without the automation unit it says so)
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyRequest } from "fastify";
import { RunStatus, type Automation, type Run } from "@mailroom/proto/automation/v1/automation_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { consoleUrl, escapeHtml, formatTime, statusBadge, type Tone } from "./layout.js";
import { sessionOf } from "./session.js";
import { STEP_LABELS } from "./automation-flow.js";

const RUN_TONE: Record<number, Tone> = { [RunStatus.ACTIVE]: "warn", [RunStatus.COMPLETED]: "ok", [RunStatus.EXITED]: "bad" };
const time = (t: Timestamp | undefined) => formatTime(t && timestampDate(t));

export const EXIT_REASONS: Record<string, string> = {
  unsubscribed: "the contact unsubscribed",
  deleted: "the contact was deleted",
  suppressed: "the address is suppressed",
  exit_step: "an exit step",
  automation_deleted: "the automation was deleted",
  send_failed: "a send failed",
  contact_not_found: "the contact no longer exists",
};

/** A run's status as a badge, with the exit reason in words. */
export function runStatusHtml(run: Run): string {
  const name = RunStatus[run.status] ?? "UNSPECIFIED";
  const reason = run.status === RunStatus.EXITED && run.exitReason ? ` <span class="muted">(${escapeHtml(EXIT_REASONS[run.exitReason] ?? run.exitReason)})</span>` : "";
  return `<span data-run-status>${statusBadge(name.toLowerCase(), RUN_TONE[run.status] ?? "info")}</span>${reason}`;
}

/** One automation's recent runs: contact, status, where it is, when it started and ended. */
export function runsTable(runs: Run[], contacts: Map<string, string>, captionId: string): string {
  if (!runs.length) return `<p class="muted">No runs yet.</p>`;
  const rows = runs.map((r) => `<tr data-run="${escapeHtml(r.id)}"><td data-label="Contact"><a href="${consoleUrl(`/contacts/${r.contactId}`)}">${escapeHtml(contacts.get(r.contactId) ?? r.contactId)}</a></td>
<td data-label="Status">${runStatusHtml(r)}</td><td data-label="Version" class="num">${r.version}</td>
<td data-label="At step">${r.currentStepId ? `<a href="#step-${escapeHtml(r.currentStepId)}"><code>${escapeHtml(r.currentStepId)}</code></a>${r.nextAt ? ` until ${time(r.nextAt)}` : ""}` : "—"}</td>
<td data-label="Started">${time(r.startedAt)}</td><td data-label="Ended">${time(r.endedAt)}</td></tr>`).join("");
  return `<div class="table-wrap"><table class="data stack" aria-labelledby="${escapeHtml(captionId)}"><thead><tr><th>Contact</th><th>Status</th><th class="num">Version</th><th>At step</th><th>Started</th><th>Ended</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** What a run step came to: the branch taken, the email sent, or why nothing went out. */
function outcome(step: Run["steps"][number]): string {
  const parts: string[] = [];
  if (step.branch) parts.push(`took <strong>${escapeHtml(step.branch)}</strong>`);
  if (step.emailId) parts.push(`email <a href="${consoleUrl(`/emails/${encodeURIComponent(step.emailId)}`)}"><code>${escapeHtml(step.emailId)}</code></a>`);
  if (step.detail) parts.push(escapeHtml(step.detail));
  return parts.join(" · ") || "—";
}

/** One run of the contact: its automation, status, and every step with its times. */
function contactRunHtml(run: Run, automation: Automation | undefined, index: number): string {
  const head = `run-${index}-h`;
  const name = automation
    ? `<a href="${consoleUrl(`/automations/${automation.id}`)}">${escapeHtml(automation.name)}</a>`
    : `<span class="muted">Deleted automation <code>${escapeHtml(run.automationId)}</code></span>`;
  const steps = run.steps.map((s) => `<tr data-step="${escapeHtml(s.stepId)}"><td data-label="Step"><code>${escapeHtml(s.stepId)}</code></td>
<td data-label="Type">${escapeHtml(STEP_LABELS[s.type] ?? s.type)}</td><td data-label="Entered">${time(s.enteredAt)}</td>
<td data-label="Completed">${s.completedAt ? time(s.completedAt) : run.status === RunStatus.ACTIVE ? "in progress" : "—"}</td><td data-label="Outcome">${outcome(s)}</td></tr>`).join("");
  return `<div class="card" data-automation-run="${escapeHtml(run.id)}"><h3 id="${head}" style="margin-top:0">${name} ${runStatusHtml(run)}</h3>
<p class="muted" style="margin:0 0 .5rem">Version ${run.version} · started ${time(run.startedAt)}${run.endedAt ? ` · ended ${time(run.endedAt)}` : ""} · run <code>${escapeHtml(run.id)}</code></p>
${steps ? `<div class="table-wrap"><table class="data stack" aria-labelledby="${head}"><thead><tr><th>Step</th><th>Type</th><th>Entered</th><th>Completed</th><th>Outcome</th></tr></thead><tbody>${steps}</tbody></table></div>` : `<p class="muted">No step yet.</p>`}</div>`;
}

/** The contact page's "Automations" section: the runs it is in, newest first. */
export async function contactAutomationsSection(deps: ConsoleDeps, request: FastifyRequest, contactId: string): Promise<string> {
  const workspaceId = sessionOf(request).workspaceId;
  const opts = rpcOptions(request);
  try {
    const { runs } = await deps.clients.automation.listRuns({ workspaceId, automationId: "", contactId, page: { limit: 20 } }, opts);
    if (!runs.length) return `<p class="muted">This contact is in no automation.</p>`;
    const ids = [...new Set(runs.map((r) => r.automationId))];
    const automations = new Map<string, Automation>();
    // A deleted automation is no longer found: its runs still show, by id.
    await Promise.all(ids.map((id) => deps.clients.automation.getAutomation({ workspaceId, automationId: id }, opts)
      .then((r) => { if (r.automation) automations.set(id, r.automation); }, () => undefined)));
    return runs.map((r, i) => contactRunHtml(r, automations.get(r.automationId), i)).join("");
  } catch (err) {
    request.log.warn({ err }, "automation runs not available");
    return `<p class="muted">The automations are not available right now.</p>`;
  }
}
