/**
 * The workspace settings page (/console/settings): the workspace's name and timezone (the
 * directory's UpdateWorkspace), and what the workspace reads but does not set: its monthly
 * limit and this month's usage (GetUsage), the tracking defaults, the server's system sender
 * and any operator hold (sending paused, banned).
 *
 *   GET  /settings    everyone signed in sees the settings; the form only those who may post
 *   POST /settings    name and timezone; 303 back with a flash, or the form again with the error
 *
 * Who: owners and admins change settings (roles.ts, "POST /console/settings"). The monthly
 * limit is the operator's (`npx mailroom workspace update --limit`): the console never sends
 * it, so a workspace cannot raise its own limit. The timezone is checked as the directory
 * checks it (an IANA zone the runtime knows) before the call, and the directory checks again.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import type { Workspace } from "@mailroom/proto/directory/v1/directory_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { editable, html, str } from "./form-values.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "./layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "./session.js";
import type { ConsoleSession } from "./types.js";

const NAME_MAX = 200;

export interface SettingsValues {
  name: string;
  timezone: string;
}

export interface SettingsError {
  field?: "name" | "timezone";
  message: string;
}

/** The zones offered while typing (the runtime's list, plus UTC which it leaves out). */
let zoneOptions: string | undefined;
function zoneList(): string {
  if (zoneOptions === undefined) {
    const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
    const zones = ["UTC", ...(intl.supportedValuesOf?.("timeZone") ?? [])];
    zoneOptions = zones.map((z) => `<option value="${escapeHtml(z)}">`).join("");
  }
  return zoneOptions;
}

/** Checks the form as the directory would; the field at fault and why, or undefined. */
export function checkSettings(values: SettingsValues): SettingsError | undefined {
  if (!values.name) return { field: "name", message: "Give the workspace a name." };
  if (values.name.length > NAME_MAX) return { field: "name", message: `The name is longer than ${NAME_MAX} characters.` };
  if (!isTimeZone(values.timezone)) {
    return { field: "timezone", message: `"${values.timezone}" is not an IANA time zone: use a name such as Europe/Paris, America/New_York or UTC.` };
  }
  return undefined;
}

/** The field a directory refusal is about. */
const fieldOfCode = (code: string | undefined): SettingsError["field"] => (code === "invalid_timezone" ? "timezone" : code === "invalid_request" ? "name" : undefined);

function settingsForm(csrf: string, values: SettingsValues, error?: SettingsError): string {
  const invalid = (field: SettingsError["field"]) => (error && error.field === field ? ` aria-invalid="true"` : "");
  const described = (field: SettingsError["field"], hint: string) => ` aria-describedby="${hint}${error && error.field === field ? " settings-error" : ""}"`;
  const alert = error ? `<div class="flash error" role="alert" id="settings-error">${escapeHtml(error.message)}</div>` : "";
  return `${alert}<form method="post" action="${consoleUrl("/settings")}" class="card" id="settings-form">${csrf}
<div class="field"><label for="ws-name">Workspace name</label>
<input id="ws-name" name="name" required maxlength="${NAME_MAX}" autocomplete="organization" value="${escapeHtml(values.name)}" style="width:100%"${invalid("name")}${described("name", "ws-name-h")}>
<p class="muted" id="ws-name-h" style="margin:.25rem 0 0">Shown in the console's header and to members you invite.</p></div>
<div class="field"><label for="ws-tz">Timezone</label>
<input id="ws-tz" name="timezone" required maxlength="64" list="ws-tz-list" autocomplete="off" spellcheck="false" value="${escapeHtml(values.timezone)}" style="width:100%;max-width:24rem"${invalid("timezone")}${described("timezone", "ws-tz-h")}>
<datalist id="ws-tz-list">${zoneList()}</datalist>
<p class="muted" id="ws-tz-h" style="margin:.25rem 0 0">An IANA name such as <code>Europe/Paris</code> or <code>UTC</code>: smart broadcasts and automations that wait until a time of day in the workspace's timezone use it.</p></div>
<div class="actions"><button type="submit">Save settings</button></div></form>`;
}

/** A count with thousands separators ("100,000"). */
const count = (n: bigint | number) => escapeHtml(Number(n).toLocaleString("en-US"));

function usageHtml(ws: Workspace, usage: { used: bigint; limit: bigint; period: string } | undefined): string {
  const limit = usage?.limit ?? ws.monthlyLimit;
  if (!usage) {
    return `<p>Monthly limit: <strong>${count(limit)}</strong> emails. <span class="muted">This month's usage could not be read just now; reload to try again.</span></p>`;
  }
  const share = limit > 0n ? Math.min(100, Math.round((Number(usage.used) / Number(limit)) * 100)) : 100;
  const tone = share >= 100 ? "bad" : share >= 80 ? "warn" : "ok";
  return `<p>${count(usage.used)} of <strong>${count(limit)}</strong> emails sent in ${escapeHtml(usage.period || "this month")} ${statusBadge(`${share}% used`, tone)}</p>
<progress value="${Number(usage.used > limit ? limit : usage.used)}" max="${Number(limit) || 1}" aria-label="This month's usage" style="width:100%;max-width:24rem">${share}%</progress>`;
}

function holdsHtml(ws: Workspace): string {
  const out: string[] = [];
  if (ws.banned) out.push(`<p>${statusBadge("Banned", "bad")} since ${formatTime(ws.bannedAt && timestampDate(ws.bannedAt))}${ws.bannedReason ? `: ${escapeHtml(ws.bannedReason)}` : ""}</p>`);
  if (ws.sendingPaused) out.push(`<p>${statusBadge("Sending paused", "warn")} since ${formatTime(ws.sendingPausedAt && timestampDate(ws.sendingPausedAt))}${ws.sendingPausedReason ? `: ${escapeHtml(ws.sendingPausedReason)}` : ""}</p>`);
  return out.length ? `<div class="card" role="status"><h2 style="margin-top:0">Held by the operator</h2>${out.join("")}<p class="muted">Only the server's operator lifts this.</p></div>` : "";
}

export function registerSettingsPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const directory = () => deps.clients.directory;

  const page = async (request: FastifyRequest, flash?: Flash, values?: SettingsValues, error?: SettingsError) => {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [{ workspace }, usage] = await Promise.all([
      directory().getWorkspace({ workspaceId: session.workspaceId }, opts),
      // The usage is shown, not needed: the page still answers without it.
      directory().getUsage({ workspaceId: session.workspaceId }, opts).catch((err: unknown) => {
        request.log.warn({ err }, "console settings: usage unavailable");
        return undefined;
      }),
    ]);
    const ws = workspace!;
    const manage = mayPost(session, "/console/settings");
    const sender = deps.consoleSignIn?.systemSender;
    const senderText = sender
      ? `<code>${escapeHtml(sender.fromName ? `${sender.fromName} <${sender.from}>` : sender.from)}</code>`
      : `<span class="muted">none configured: sign-in links and invitations cannot be mailed (the operator sets <code>MAILROOM_SYSTEM_FROM</code>)</span>`;
    const form = manage
      ? settingsForm(csrfField(session), values ?? { name: ws.name, timezone: ws.timezone || "UTC" }, error)
      : `<div class="card"><dl style="margin:0"><dt class="muted">Workspace name</dt><dd style="margin:0 0 .5rem">${escapeHtml(ws.name)}</dd>
<dt class="muted">Timezone</dt><dd style="margin:0"><code>${escapeHtml(ws.timezone || "UTC")}</code></dd></dl></div>
<p class="muted">Only owners and admins change the workspace's settings.</p>`;
    const body = `<h1>Settings</h1>
${holdsHtml(ws)}${form}
<h2 id="usage-h">Monthly limit</h2>
<div class="card" aria-labelledby="usage-h">${usageHtml(ws, usage)}
<p class="muted" style="margin-bottom:0">The server's operator sets the limit; sends past it are refused until the next month.</p></div>
<h2 id="tracking-h">Tracking</h2>
<div class="card" aria-labelledby="tracking-h"><dl style="margin:0">
<dt class="muted">Opens</dt><dd style="margin:0 0 .5rem">On for templated emails, broadcasts and automation emails; off for raw HTML emails.</dd>
<dt class="muted">Clicks</dt><dd style="margin:0">On: links are rewritten through this server's tracking address.</dd></dl>
<p class="muted" style="margin-bottom:0">These are the server's defaults; each email, broadcast or automation step may turn them off with <code>trackOpens</code> and <code>trackClicks</code>.</p></div>
<h2 id="system-h">System sender</h2>
<div class="card" aria-labelledby="system-h"><p style="margin-top:0">Sign-in links and invitations come from ${senderText}.</p>
<p class="muted" style="margin-bottom:0">The server's operator sets it for every workspace.</p></div>
<div class="card"><dl style="margin:0"><dt class="muted">Workspace id</dt><dd style="margin:0 0 .5rem"><code>${escapeHtml(ws.id)}</code></dd>
<dt class="muted">Created</dt><dd style="margin:0">${formatTime(ws.createdAt && timestampDate(ws.createdAt))}</dd></dl></div>`;
    // The header names the workspace as it is now (a session may have cached the old name).
    const shown: ConsoleSession = { ...session, workspaceName: ws.name || session.workspaceName };
    return consolePage({ title: "Settings", session: shown, active: "settings", flash, body });
  };

  scope.get("/settings", async (request, reply) => html(reply, await page(request, request.consoleFlash)));

  scope.post("/settings", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values: SettingsValues = { name: str(request.body, "name").trim().slice(0, 1024), timezone: str(request.body, "timezone").trim().slice(0, 200) };
    const invalid = checkSettings(values);
    if (invalid) return html(reply, await page(request, undefined, values, invalid), 400);
    try {
      await directory().updateWorkspace({ workspaceId: session.workspaceId, name: values.name, timezone: values.timezone }, rpcOptions(request));
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return html(reply, await page(request, undefined, values, { field: fieldOfCode(e.code), message: e.message }), e.statusCode);
    }
    // This member's next page reads the new name (other sessions within the auth cache's time).
    if (session.memberId) deps.sessions.forget({ memberId: session.memberId });
    setFlash(reply, { kind: "ok", message: "Settings saved." });
    return seeOther(reply, consoleUrl("/settings"));
  });
}
