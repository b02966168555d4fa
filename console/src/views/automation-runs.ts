/**
 * Automation runs, the views: the recent runs of one automation (its page) and the runs a
 * contact is in, each step with its times and the email a send step sent (the contact page's
 * section, loaded by ../automation-runs.ts).
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { RunStatus, type Automation, type Run } from "@mailroom/proto/automation/v1/automation_pb.js";
import { consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { STEP_LABELS } from "./automation-flow.js";
import { html, trusted, type Html } from "./html.js";

const RUN_TONE: Record<number, Tone> = { [RunStatus.ACTIVE]: "warn", [RunStatus.COMPLETED]: "ok", [RunStatus.EXITED]: "bad" };
const time = (t: Timestamp | undefined) => trusted(formatTime(t && timestampDate(t)));

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
export function runStatusView(run: Run): Html {
  const name = RunStatus[run.status] ?? "UNSPECIFIED";
  const reason = run.status === RunStatus.EXITED && run.exitReason ? html` <span class="muted">(${EXIT_REASONS[run.exitReason] ?? run.exitReason})</span>` : "";
  return html`<span data-run-status>${trusted(statusBadge(name.toLowerCase(), RUN_TONE[run.status] ?? "info"))}</span>${reason}`;
}

/** One automation's recent runs: contact, status, where it is, when it started and ended. */
export function runsTable(runs: Run[], contacts: Map<string, string>, captionId: string): Html {
  if (!runs.length) return html`<p class="muted">No runs yet.</p>`;
  const rows = runs.map((r) => html`<tr data-run="${r.id}"><td data-label="Contact"><a href="${consoleUrl(`/contacts/${r.contactId}`)}">${contacts.get(r.contactId) ?? r.contactId}</a></td>
<td data-label="Status">${runStatusView(r)}</td><td data-label="Version" class="num">${r.version}</td>
<td data-label="At step">${r.currentStepId ? html`<a href="#step-${r.currentStepId}"><code>${r.currentStepId}</code></a>${r.nextAt ? html` until ${time(r.nextAt)}` : ""}` : "—"}</td>
<td data-label="Started">${time(r.startedAt)}</td><td data-label="Ended">${time(r.endedAt)}</td></tr>`);
  return html`<div class="table-wrap"><table class="data stack" aria-labelledby="${captionId}"><thead><tr><th>Contact</th><th>Status</th><th class="num">Version</th><th>At step</th><th>Started</th><th>Ended</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** What a run step came to: the branch taken, the email sent, or why nothing went out. */
function outcome(step: Run["steps"][number]): Html {
  const parts: Html[] = [];
  if (step.branch) parts.push(html`took <strong>${step.branch}</strong>`);
  if (step.emailId) parts.push(html`email <a href="${consoleUrl(`/emails/${encodeURIComponent(step.emailId)}`)}"><code>${step.emailId}</code></a>`);
  if (step.detail) parts.push(html`${step.detail}`);
  return parts.length ? html`${parts.map((p, i) => (i ? html` · ${p}` : p))}` : html`—`;
}

/** One run of the contact: its automation, status, and every step with its times. */
function contactRunView(run: Run, automation: Automation | undefined, index: number): Html {
  const head = `run-${index}-h`;
  const name = automation
    ? html`<a href="${consoleUrl(`/automations/${automation.id}`)}">${automation.name}</a>`
    : html`<span class="muted">Deleted automation <code>${run.automationId}</code></span>`;
  const steps = run.steps.map((s) => html`<tr data-step="${s.stepId}"><td data-label="Step"><code>${s.stepId}</code></td>
<td data-label="Type">${STEP_LABELS[s.type] ?? s.type}</td><td data-label="Entered">${time(s.enteredAt)}</td>
<td data-label="Completed">${s.completedAt ? time(s.completedAt) : run.status === RunStatus.ACTIVE ? "in progress" : "—"}</td><td data-label="Outcome">${outcome(s)}</td></tr>`);
  return html`<div class="card" data-automation-run="${run.id}"><h3 id="${head}" style="margin-top:0">${name} ${runStatusView(run)}</h3>
<p class="muted" style="margin:0 0 .5rem">Version ${run.version} · started ${time(run.startedAt)}${run.endedAt ? html` · ended ${time(run.endedAt)}` : ""} · run <code>${run.id}</code></p>
${steps.length ? html`<div class="table-wrap"><table class="data stack" aria-labelledby="${head}"><thead><tr><th>Step</th><th>Type</th><th>Entered</th><th>Completed</th><th>Outcome</th></tr></thead><tbody>${steps}</tbody></table></div>` : html`<p class="muted">No step yet.</p>`}</div>`;
}

/** The runs a contact is in, newest first (`automations` by id; a deleted one is missing). */
export function contactRunsView(runs: Run[], automations: Map<string, Automation>): Html {
  return html`${runs.map((r, i) => contactRunView(r, automations.get(r.automationId), i))}`;
}
