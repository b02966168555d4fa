/**
 * The workspace settings page (/console/settings): the views. The handlers are pages/settings.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Workspace } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { consoleUrl } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, field, time } from "./page-parts.js";

export const NAME_MAX = 200;

export interface SettingsValues {
  name: string;
  timezone: string;
}

export interface SettingsError {
  field?: "name" | "timezone";
  message: string;
}

/** This month's usage as GetUsage answers it. */
export interface Usage {
  used: bigint;
  limit: bigint;
  period: string;
}

/** The zones offered while typing (the runtime's list, plus UTC which it leaves out). */
let zoneOptions: Html | undefined;
function zoneList(): Html {
  if (zoneOptions === undefined) {
    const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
    const zones = ["UTC", ...(intl.supportedValuesOf?.("timeZone") ?? [])];
    zoneOptions = html`${zones.map((z) => html`<option value="${z}">`)}`;
  }
  return zoneOptions;
}

function settingsForm(csrf: string, values: SettingsValues, error?: SettingsError): Html {
  const invalid = (at: SettingsError["field"]) => (error && error.field === at ? html` aria-invalid="true"` : "");
  const described = (at: SettingsError["field"], hint: string) => html` aria-describedby="${hint}${error && error.field === at ? " settings-error" : ""}"`;
  const alert = error ? html`<div class="flash error" role="alert" id="settings-error">${error.message}</div>` : "";
  return html`${alert}<form method="post" action="${consoleUrl("/settings")}" class="card" id="settings-form">${field(csrf)}
<div class="field"><label for="ws-name">Workspace name</label>
<input id="ws-name" name="name" required maxlength="${NAME_MAX}" autocomplete="organization" value="${values.name}" style="width:100%"${invalid("name")}${described("name", "ws-name-h")}>
<p class="muted" id="ws-name-h" style="margin:.25rem 0 0">Shown in the console's header and to members you invite.</p></div>
<div class="field"><label for="ws-tz">Timezone</label>
<input id="ws-tz" name="timezone" required maxlength="64" list="ws-tz-list" autocomplete="off" spellcheck="false" value="${values.timezone}" style="width:100%;max-width:24rem"${invalid("timezone")}${described("timezone", "ws-tz-h")}>
<datalist id="ws-tz-list">${zoneList()}</datalist>
<p class="muted" id="ws-tz-h" style="margin:.25rem 0 0">An IANA name such as <code>Europe/Paris</code> or <code>UTC</code>: smart broadcasts and automations that wait until a time of day in the workspace's timezone use it.</p></div>
<div class="actions"><button type="submit">Save settings</button></div></form>`;
}

/** A count with thousands separators ("100,000"). */
const count = (n: bigint | number) => Number(n).toLocaleString("en-US");

function usageView(ws: Workspace, usage: Usage | undefined): Html {
  const limit = usage?.limit ?? ws.monthlyLimit;
  if (!usage) {
    return html`<p>Monthly limit: <strong>${count(limit)}</strong> emails. <span class="muted">This month's usage could not be read just now; reload to try again.</span></p>`;
  }
  const share = limit > 0n ? Math.min(100, Math.round((Number(usage.used) / Number(limit)) * 100)) : 100;
  const tone = share >= 100 ? "bad" : share >= 80 ? "warn" : "ok";
  return html`<p>${count(usage.used)} of <strong>${count(limit)}</strong> emails sent in ${usage.period || "this month"} ${badge(`${share}% used`, tone)}</p>
<progress value="${Number(usage.used > limit ? limit : usage.used)}" max="${Number(limit) || 1}" aria-label="This month's usage" style="width:100%;max-width:24rem">${share}%</progress>`;
}

function holdsView(ws: Workspace): Html | "" {
  const out: Html[] = [];
  if (ws.banned) out.push(html`<p>${badge("Banned", "bad")} since ${time(ws.bannedAt && timestampDate(ws.bannedAt))}${ws.bannedReason ? `: ${ws.bannedReason}` : ""}</p>`);
  if (ws.sendingPaused) out.push(html`<p>${badge("Sending paused", "warn")} since ${time(ws.sendingPausedAt && timestampDate(ws.sendingPausedAt))}${ws.sendingPausedReason ? `: ${ws.sendingPausedReason}` : ""}</p>`);
  return out.length ? html`<div class="card" role="status"><h2 style="margin-top:0">Held by the operator</h2>${out}<p class="muted">Only the server's operator lifts this.</p></div>` : "";
}

export interface SettingsPageData {
  workspace: Workspace;
  usage?: Usage;
  /** The form (for who may change settings): its hidden field, the values shown and the error. */
  form?: { csrf: string; values: SettingsValues; error?: SettingsError };
  /** The server's system sender, if one is configured. */
  systemSender?: { from: string; fromName?: string };
}

export function settingsView({ workspace: ws, usage, form, systemSender: sender }: SettingsPageData): Html {
  const senderText = sender
    ? html`<code>${sender.fromName ? `${sender.fromName} <${sender.from}>` : sender.from}</code>`
    : html`<span class="muted">none configured: sign-in links and invitations cannot be mailed (the operator sets <code>MAILROOM_SYSTEM_FROM</code>)</span>`;
  const settings = form
    ? settingsForm(form.csrf, form.values, form.error)
    : html`<div class="card"><dl style="margin:0"><dt class="muted">Workspace name</dt><dd style="margin:0 0 .5rem">${ws.name}</dd>
<dt class="muted">Timezone</dt><dd style="margin:0"><code>${ws.timezone || "UTC"}</code></dd></dl></div>
<p class="muted">Only owners and admins change the workspace's settings.</p>`;
  return html`<h1>Settings</h1>
${holdsView(ws)}${settings}
<h2 id="usage-h">Monthly limit</h2>
<div class="card" aria-labelledby="usage-h">${usageView(ws, usage)}
<p class="muted" style="margin-bottom:0">The server's operator sets the limit; sends past it are refused until the next month.</p></div>
<h2 id="tracking-h">Tracking</h2>
<div class="card" aria-labelledby="tracking-h"><dl style="margin:0">
<dt class="muted">Opens</dt><dd style="margin:0 0 .5rem">On for templated emails, broadcasts and automation emails; off for raw HTML emails.</dd>
<dt class="muted">Clicks</dt><dd style="margin:0">On: links are rewritten through this server's tracking address.</dd></dl>
<p class="muted" style="margin-bottom:0">These are the server's defaults; each email, broadcast or automation step may turn them off with <code>trackOpens</code> and <code>trackClicks</code>.</p></div>
<h2 id="system-h">System sender</h2>
<div class="card" aria-labelledby="system-h"><p style="margin-top:0">Sign-in links and invitations come from ${senderText}.</p>
<p class="muted" style="margin-bottom:0">The server's operator sets it for every workspace.</p></div>
<div class="card"><dl style="margin:0"><dt class="muted">Workspace id</dt><dd style="margin:0 0 .5rem"><code>${ws.id}</code></dd>
<dt class="muted">Created</dt><dd style="margin:0">${time(ws.createdAt && timestampDate(ws.createdAt))}</dd></dl></div>`;
}
