/**
 * Broadcasts (/console/broadcasts): the views of the list, the draft editor (form, preview,
 * test send, scheduling) and the progress view. The handlers are pages/broadcasts.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { BroadcastStatus, DeliveryMethod, type Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { consoleUrl, formatTime, statusBadge, statusWords, type Tone } from "../layout.js";
import type { DraftValues } from "../pages/broadcasts-form.js";
import { abFormView, variantName } from "./broadcasts-ab.js";
import { audiencePickerView, type PickerContext } from "./audience-picker.js";
import { html, trusted, type Html } from "./html.js";

const n = (v: bigint | undefined) => Number(v ?? 0n);
const STATUS_TONE: Record<string, Tone> = { DRAFT: "info", SCHEDULED: "warn", IN_PROGRESS: "warn", COMPLETED: "ok" };
export const statusName = (s: BroadcastStatus) => BroadcastStatus[s] ?? "UNSPECIFIED";
export const methodName = (m: DeliveryMethod) => (m ? DeliveryMethod[m] : "");
const badge = (text: string, tone: Tone) => trusted(statusBadge(text, tone));
const time = (t: Parameters<typeof timestampDate>[0] | undefined) => trusted(formatTime(t && timestampDate(t)));

/** DESIGN.md §6, in words a sender can act on. */
const METHODS: Array<{ value: keyof typeof DeliveryMethod; label: string; explain: string }> = [
  { value: "ASAP", label: "As soon as possible", explain: "Everyone at once, as fast as the sending limits allow. For an established account and a list that is known to be clean." },
  { value: "PROGRESSIVE", label: "Progressive", explain: "Waves that double (1,000, then 2,000, 4,000 … every 10 minutes); sending stops early if a wave bounces too much, protecting your reputation. The default for an established account." },
  { value: "SMART", label: "Smart (local time)", explain: "Each contact gets it at the send time's wall-clock hour in their own timezone (at most 24 hours later); contacts without a timezone get it at the send time." },
  { value: "WARMUP", label: "Warm-up", explain: "Daily caps that ramp up (1,000, 1,500, 2,000, 3,000, 5,000, 7,000, 10,000, then ×1.3 a day); the rest waits for the next day. The only method for a new sending account." },
  { value: "OPTIMAL", label: "Best hour (per contact)", explain: "Each contact at the hour they usually open and click (their last 90 days, in their timezone), within 24 hours of the send time; contacts with too little history as Smart." },
];

export const COUNTERS = [
  ["recipients", "Recipients"], ["sent", "Sent"], ["delivered", "Delivered"], ["opened", "Opened"], ["clicked", "Clicked"],
  ["bounced", "Bounced"], ["failed", "Failed"], ["suppressed", "Suppressed"], ["unsubscribed", "Unsubscribed"],
  // DESIGN §10.4: recipients whose reply the inbound unit matched to this broadcast.
  ["replied", "Replied"],
] as const;
export type Counters = Record<(typeof COUNTERS)[number][0], number>;

export function countersOf(b: Broadcast): Counters {
  const p = b.progress;
  return Object.fromEntries(COUNTERS.map(([k]) => [k, n(p?.[k])])) as Counters;
}

export function broadcastListView(broadcasts: Broadcast[], canEdit: boolean, nextCursor?: string): Html {
  const rows = broadcasts.map((b) => {
    const p = b.progress;
    return html`<tr><td data-label="Name"><a href="${consoleUrl(`/broadcasts/${b.id}`)}">${b.name || b.id}</a>${b.abTest ? html` ${badge("A/B", "info")}` : ""}</td>
<td data-label="Status">${badge(statusName(b.status), STATUS_TONE[statusName(b.status)] ?? "info")}</td>
<td data-label="Subject">${b.subject}</td>
<td data-label="Sent" class="num">${n(p?.sent)} / ${n(p?.recipients)}</td>
<td data-label="Created">${time(b.createdAt)}</td></tr>`;
  });
  const more = nextCursor !== undefined ? html`<p><a href="${consoleUrl("/broadcasts", { cursor: nextCursor })}">Older broadcasts</a></p>` : "";
  return html`<h1>Broadcasts</h1>
<div class="actions">${canEdit ? html`<a class="button" href="${consoleUrl("/broadcasts/new")}">New draft</a>` : ""}</div>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Broadcasts, newest first</caption>
<thead><tr><th>Name</th><th>Status</th><th>Subject</th><th class="num">Sent / recipients</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No broadcasts yet.</p>`}`;
}

const input = (name: string, label: string, value: string, extra: Html | "" = "", hint = "") =>
  html`<div class="field"><label for="f-${name}">${label}</label>${hint ? html`<p class="muted" id="h-${name}" style="margin:0 0 .25rem">${hint}</p>` : ""}
<input id="f-${name}" name="${name}" value="${value}" style="width:100%"${hint ? html` aria-describedby="h-${name}"` : ""} ${extra}></div>`;
const check = (name: string, label: string, on: boolean) =>
  html`<div class="field check"><input type="checkbox" id="f-${name}" name="${name}"${on ? html` checked` : ""}><label for="f-${name}">${label}</label></div>`;

/** The draft form (new and saved drafts alike); `csrf` is the hidden input's markup. */
export function draftFormView(action: string, v: DraftValues, csrf: string, submit: string, picker: PickerContext): Html {
  return html`<form method="post" action="${action}" class="card">${trusted(csrf)}
${input("name", "Name (only you see it)", v.name, html`required maxlength=200`)}
${input("subject", "Subject", v.subject, html`required`, "Merge contact data with {{firstName}}, {{email}} or a property: {{plan}}.")}
${input("previewText", "Preview text (shown after the subject in inboxes)", v.previewText)}
<div class="grid">${input("fromName", "From name", v.fromName, html`required`)}${input("fromEmail", "From address", v.fromEmail, html`required type="email"`, "A verified address, or one on a verified domain.")}</div>
${input("replyTo", "Reply-to (optional, comma separated)", v.replyTo)}
<div class="field"><label for="f-html">HTML</label><textarea id="f-html" name="html" required rows="14">${v.html}</textarea></div>
<div class="field"><label for="f-text">Plain text (optional: made from the HTML when empty)</label><textarea id="f-text" name="text" rows="5">${v.text}</textarea></div>
${audiencePickerView(v.audience, picker)}
<fieldset class="field"><legend>Tracking</legend>
${check("trackOpens", "Track opens", v.trackOpens)}${check("trackClicks", "Track clicks", v.trackClicks)}
${check("allowUnknownVariables", "Allow merge fields that are not contact properties (they render empty)", v.allowUnknownVariables)}</fieldset>
${abFormView(v.ab)}
<div class="actions"><button type="submit">${submit}</button><a class="button secondary" href="${consoleUrl("/broadcasts")}">Back to broadcasts</a></div></form>`;
}

export const newDraftView = (v: DraftValues, csrf: string, picker: PickerContext): Html =>
  html`<h1>New draft</h1>${draftFormView(consoleUrl("/broadcasts"), v, csrf, "Save draft", picker)}`;

/** A preview of the draft (one per A/B variant): the merged message, or why it could not be made. */
export type Preview = { variant?: number } & ({ ok: true; p: { subject: string; previewText: string; html: string; text: string; contactFound: boolean } } | { ok: false; message: string });

function previewsView(previews: Preview[], contact: string): Html {
  const first = previews[0];
  const notice = first?.ok
    ? html`${contact && !first.p.contactFound ? html`<p class="flash error" role="status">No contact with the address ${contact}: merge fields show sample values, their names in brackets.</p>` : ""}
${!contact ? html`<p class="muted" data-preview-sample>No contact chosen: merge fields show sample values, their names in brackets (<code>[firstName]</code>). Choose a contact to see their data.</p>` : ""}`
    : "";
  const shown = previews.map((preview) => {
    const name = preview.variant === undefined ? "" : `Variant ${variantName(preview.variant)}`;
    const body = preview.ok
      ? html`<dl class="grid"><div><dt class="muted">Subject</dt><dd data-preview-subject style="margin:0;font-weight:600">${preview.p.subject}</dd></div>
<div><dt class="muted">Preview text</dt><dd style="margin:0">${preview.p.previewText || "—"}</dd></div></dl>
<iframe class="mail" title="Preview of the email${name ? ` (${name})` : ""}${contact ? ` for ${contact}` : ""}" sandbox srcdoc="${preview.p.html}"></iframe>
<details><summary>Plain text version</summary><pre>${preview.p.text}</pre></details>`
      : html`<p class="flash error" role="alert">The preview${name ? ` of ${name}` : ""} could not be made: ${preview.message}</p>`;
    return name ? html`<section data-preview-variant="${preview.variant}" aria-label="${name}"><h3>${name}</h3>${body}</section>` : body;
  });
  return html`${notice}${joinLines(shown)}`;
}

const joinLines = (parts: Html[]) => parts.map((part, i) => (i ? html`\n${part}` : part));

export interface DraftPage {
  broadcast: Broadcast;
  values: DraftValues;
  contact: string;
  previews: Preview[];
  contacts: Contact[];
  members: string[];
  /** The audience counted now, if the service counted it. */
  audienceCount?: number;
  /** The pre-send check's panel (views/broadcast-check.ts). */
  checkPanel: Html;
  /** For an editing session: the form's hidden CSRF input and the audience picker's choices. */
  edit?: { csrf: string; picker: PickerContext };
}

/** A DRAFT: the editor beside the preview, then the test send and the schedule forms. */
export function draftPageView(d: DraftPage): Html {
  const b = d.broadcast;
  const base = consoleUrl(`/broadcasts/${b.id}`);
  const variants = b.abTest?.variants.length ?? 0;
  const options = d.contacts.map((c) => html`<option value="${c.email}">${[c.firstName, c.lastName].filter(Boolean).join(" ")}</option>`);
  return html`<h1>${b.name} ${badge("DRAFT", "info")}</h1>
<p class="muted">Created ${time(b.createdAt)} · last saved ${time(b.updatedAt)}</p>
<div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(min(100%,26rem),1fr))">
<section aria-labelledby="edit-h"><h2 id="edit-h">Edit</h2>${d.edit ? draftFormView(base, d.values, d.edit.csrf, "Save draft", { ...d.edit.picker, count: d.audienceCount }) : html`<p class="muted">Read-only session.</p>`}</section>
<section aria-labelledby="preview-h"><h2 id="preview-h">Preview</h2>
<form method="get" action="${base}" class="row card"><div class="field" style="flex:1"><label for="contact">Preview for contact (email)</label>
<input id="contact" name="contact" type="email" list="contact-list" value="${d.contact}" style="width:100%" placeholder="someone@example.com"><datalist id="contact-list">${options}</datalist></div>
<div class="field"><button type="submit" class="secondary">Show preview</button></div></form>
${previewsView(d.previews, d.contact)}
${d.checkPanel}
<p class="muted">The preview is the saved draft${variants ? ", every variant of its A/B test" : ""}. Tracking is off in previews, so nothing here counts as an open or click.</p></section></div>
${d.edit ? html`<section aria-labelledby="test-h" id="test"><h2 id="test-h">Send a test</h2>
<form method="post" action="${base}/test" class="card">${trusted(d.edit.csrf)}<fieldset><legend>Workspace members to send to (up to 10)</legend>${memberBoxes(d.members)}</fieldset>
<p class="muted">${variants ? `Each member gets every variant: ${Array.from({ length: variants }, (_, i) => `"[TEST ${variantName(i)}]"`).join(", ")} before the subject.` : `The test carries "[TEST]" before the subject.`} It is merged with the member's contact data when there is one, and is not counted.</p>
<div class="actions"><button type="submit" class="secondary">Send test</button></div></form></section>
${scheduleView(base, d.edit.csrf, d.audienceCount)}` : ""}`;
}

function memberBoxes(members: string[]): Html {
  return members.length
    ? html`${members.map((m, i) => html`<div class="check"><input type="checkbox" id="m-${i}" name="member" value="${m}"><label for="m-${i}">${m}</label></div>`)}`
    : html`<p class="muted">This workspace has no members yet; test sends go to members only.</p>`;
}

function scheduleView(base: string, csrf: string, audienceCount: number | undefined): Html {
  const methods = METHODS.map((m, i) => html`<div class="field"><input type="radio" id="dm-${m.value}" name="deliveryMethod" value="${m.value}"${i === 1 ? html` checked` : ""} aria-describedby="dm-${m.value}-h" style="min-height:auto">
<label for="dm-${m.value}" style="display:inline">${m.label} (${m.value})</label><p class="muted" id="dm-${m.value}-h" style="margin:.1rem 0 0 1.6rem">${m.explain}</p></div>`);
  return html`<section aria-labelledby="schedule-h" id="schedule"><h2 id="schedule-h">Send or schedule</h2>
<form method="post" action="${base}/schedule" class="card" data-confirm="Send this broadcast to your audience${audienceCount === undefined ? "" : ` (${audienceCount} contacts now)`}?">${trusted(csrf)}
<p id="schedule-audience">${audienceCount === undefined ? "The audience is counted when sending starts." : html`The saved audience holds <strong>${audienceCount}</strong> ${audienceCount === 1 ? "contact" : "contacts"} now (subscribed, not suppressed); it is resolved again when sending starts.`}</p>
<fieldset class="field"><legend>When</legend>
<div><input type="radio" id="when-now" name="when" value="now" checked style="min-height:auto"> <label for="when-now" style="display:inline">Now</label></div>
<div><input type="radio" id="when-later" name="when" value="later" style="min-height:auto"> <label for="when-later" style="display:inline">Later, at:</label></div>
<label for="sendAt" class="sr-only">Send time (UTC)</label><input type="datetime-local" id="sendAt" name="sendAt" aria-describedby="sendAt-h"> <span class="muted" id="sendAt-h">UTC, at most 90 days ahead</span></fieldset>
<fieldset class="field"><legend>Delivery method</legend>${methods}</fieldset>
<div class="actions"><button type="submit">Schedule</button></div></form></section>`;
}

export interface ProgressPage {
  broadcast: Broadcast;
  /** The progress chart (views/broadcasts-chart.ts) and the A/B section (views/broadcasts-ab.ts). */
  chart: Html;
  ab: Html;
  /** For an editing session, the hidden CSRF input of the cancel form. */
  csrf?: string;
}

// Without JS the page refreshes itself while sending; with JS it polls the JSON instead,
// and reloads once at the end so the completion time and final counters are the server's.
const POLL_JS = `var st=document.querySelector("[data-status]");
function tick(){fetch(url,{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return;
Object.keys(d.counters).forEach(function(k){var e=document.querySelector('[data-counter="'+k+'"]');if(e)e.textContent=d.counters[k]});
document.getElementById("chart").innerHTML=d.chart;var ab=document.getElementById("ab");if(ab&&d.ab&&!ab.contains(document.activeElement))ab.outerHTML=d.ab;st.textContent=d.statusText||d.status;st.className="badge "+(d.status==="COMPLETED"?"ok":"warn");var c=document.getElementById("cancel");if(c&&d.status!=="SCHEDULED"&&!(c.hasAttribute("data-ab-cancel")&&d.ab&&d.ab.indexOf('data-ab-state="waiting"')>=0))c.remove();
if(d.status!=="COMPLETED")setTimeout(tick,2000);else{document.getElementById("live").textContent="Sending is complete.";setTimeout(function(){location.reload()},1500)}}).catch(function(){setTimeout(tick,5000)})}
setTimeout(tick,2000)})();`;

/** A broadcast that is scheduled, sending or sent: counters, the A/B section, the chart. */
export function progressPageView({ broadcast: b, chart, ab, csrf }: ProgressPage): Html {
  const status = statusName(b.status);
  const counters = countersOf(b);
  const done = b.status === BroadcastStatus.COMPLETED;
  const base = consoleUrl(`/broadcasts/${b.id}`);
  const cells = COUNTERS.map(([key, label]) =>
    html`<div class="card" style="margin:0"><div class="muted">${label}</div><div style="font-size:1.6rem;font-weight:700" data-counter="${key}">${counters[key]}</div></div>`);
  const abWaiting = b.abTest?.state === "waiting" && b.abTest.winner === undefined;
  const cancel = b.status === BroadcastStatus.SCHEDULED && csrf !== undefined
    ? html`<form id="cancel" method="post" action="${base}/cancel" data-confirm="Cancel this scheduled broadcast?">${trusted(csrf)}<button class="danger" type="submit">Cancel and edit</button></form>`
    : abWaiting && csrf !== undefined
      ? html`<form id="cancel" data-ab-cancel method="post" action="${base}/cancel" data-confirm="Stop here: the rest of the audience does not get this broadcast?">${trusted(csrf)}<button class="danger" type="submit">Cancel the rest</button></form>`
      : "";
  const refresh = done ? "" : html`<noscript><meta http-equiv="refresh" content="5"></noscript>`;
  // The URL is JSON-encoded for the script (consoleUrl of an id that matched ^cmp_[0-9a-z]{26}$).
  const script = done ? "" : html`<script>(function(){var url=${trusted(JSON.stringify(`${base}/progress.json`))};${trusted(POLL_JS)}</script>`;
  return html`${refresh}<h1>${b.name} <span class="badge ${STATUS_TONE[status] ?? "info"}" data-status>${statusWords(status)}</span></h1>
<p class="muted">Subject: ${b.subject} · method ${methodName(b.deliveryMethod) || "—"} · scheduled <span data-scheduled>${time(b.scheduledAt)}</span>
· started <span data-started>${time(b.sentAt)}</span> · completed <span data-completed>${time(b.completedAt)}</span></p>
${b.pauseReason === "ab_test_cancelled" ? html`<p class="flash error" role="alert">A/B test cancelled during the wait: the rest of the audience does not get this broadcast.</p>`
  : b.pauseReason ? html`<p class="flash error" role="alert">Releasing stopped early: ${b.pauseReason}.</p>` : ""}
<p id="live" role="status" aria-live="polite" class="muted">${done ? "Sending is complete." : html`Updates every few seconds. <a href="${base}">Reload</a>`}</p>
<section aria-labelledby="counters-h"><h2 id="counters-h">Counters</h2><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(9rem,1fr))">${cells}</div></section>
${ab}
<section aria-labelledby="chart-h"><h2 id="chart-h">Over time</h2><div class="card" id="chart">${chart}</div></section>
<div class="actions">${cancel}<a class="button secondary" href="${consoleUrl("/broadcasts")}">Back to broadcasts</a></div>${script}`;
}
