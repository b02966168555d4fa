/**
 * Broadcasts pages: the list, the draft editor (with a preview merged for a chosen contact,
 * test sends and scheduling), and the progress view of a broadcast that is sending or sent.
 *
 *   GET  /broadcasts                    list
 *   GET  /broadcasts/new                empty draft form
 *   POST /broadcasts                    create a draft
 *   GET  /broadcasts/:id[?contact=]     a DRAFT: editor + preview; otherwise the progress view
 *   POST /broadcasts/:id                save the draft
 *   POST /broadcasts/:id/test           test send to workspace members
 *   POST /broadcasts/:id/schedule       send now or later with a delivery method
 *   POST /broadcasts/:id/cancel         SCHEDULED back to DRAFT (or an A/B test stopped during its wait)
 *   POST /broadcasts/:id/ab/winner      an A/B variant sent to the rest now ("send this one now")
 *   GET  /broadcasts/:id/progress.json  what the progress view polls
 *   GET  /broadcasts/audience-count.json  the draft form's audience count (audience-picker.ts)
 *
 * Every call takes the workspace from the session, so another workspace's broadcast id is
 * simply not found (a 404 page).
 */
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { BroadcastStatus, DeliveryMethod, type Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, statusWords, timeText, type Flash, type Tone } from "./layout.js";
import { seeOther, sessionOf, setFlash } from "./session.js";
import { progressChart, type ChartPoint, type ChartWindow } from "./broadcasts-chart.js";
import { EVERYONE, audienceFromForm, audiencePickerHtml, audienceRpc, audienceValuesOf, type AudienceValues, type PickerContext } from "./audience-picker.js";
import { workspaceGroups, workspaceSegments } from "./segments.js";
import { workspaceTopics } from "./topics.js";
import { NO_AB, abFormHtml, abFromForm, abProgressHtml, abRpc, abValuesOf, variantName, type AbValues } from "./broadcasts-ab.js";
import { checkPanelHtml, confirmScheduleDespiteErrors } from "./broadcast-check.js";

type Form = Record<string, string | string[] | undefined>;
const str = (body: unknown, name: string): string => {
  const v = (body as Form | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) ? String(v[0] ?? "") : "";
};
const all = (body: unknown, name: string): string[] => {
  const v = (body as Form | undefined)?.[name];
  return v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)];
};
const html = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page);
const n = (v: bigint | undefined) => Number(v ?? 0n);
const ID = /^cmp_[0-9a-z]{26}$/;

const STATUS_TONE: Record<string, Tone> = { DRAFT: "info", SCHEDULED: "warn", IN_PROGRESS: "warn", COMPLETED: "ok" };
const statusName = (s: BroadcastStatus) => BroadcastStatus[s] ?? "UNSPECIFIED";
const methodName = (m: DeliveryMethod) => (m ? DeliveryMethod[m] : "");

/** DESIGN.md §6, in words a sender can act on. */
const METHODS: Array<{ value: keyof typeof DeliveryMethod; label: string; explain: string }> = [
  { value: "ASAP", label: "As soon as possible", explain: "Everyone at once, as fast as the sending limits allow. For an established account and a list that is known to be clean." },
  { value: "PROGRESSIVE", label: "Progressive", explain: "Waves that double (1,000, then 2,000, 4,000 … every 10 minutes); sending stops early if a wave bounces too much, protecting your reputation. The default for an established account." },
  { value: "SMART", label: "Smart (local time)", explain: "Each contact gets it at the send time's wall-clock hour in their own timezone (at most 24 hours later); contacts without a timezone get it at the send time." },
  { value: "WARMUP", label: "Warm-up", explain: "Daily caps that ramp up (1,000, 1,500, 2,000, 3,000, 5,000, 7,000, 10,000, then ×1.3 a day); the rest waits for the next day. The only method for a new sending account." },
  { value: "OPTIMAL", label: "Best hour (per contact)", explain: "Each contact at the hour they usually open and click (their last 90 days, in their timezone), within 24 hours of the send time; contacts with too little history as Smart." },
];

interface DraftValues {
  name: string;
  subject: string;
  previewText: string;
  fromEmail: string;
  fromName: string;
  replyTo: string;
  html: string;
  text: string;
  trackOpens: boolean;
  trackClicks: boolean;
  allowUnknownVariables: boolean;
  audience: AudienceValues;
  ab: AbValues;
}

const EMPTY: DraftValues = {
  name: "", subject: "", previewText: "", fromEmail: "", fromName: "", replyTo: "", html: "", text: "",
  trackOpens: true, trackClicks: true, allowUnknownVariables: false, audience: EVERYONE, ab: NO_AB,
};

function valuesOf(b: Broadcast): DraftValues {
  return {
    name: b.name, subject: b.subject, previewText: b.previewText, fromEmail: b.fromEmail, fromName: b.fromName,
    replyTo: b.replyTo.join(", "), html: b.html, text: b.text,
    trackOpens: b.settings?.trackOpens ?? true, trackClicks: b.settings?.trackClicks ?? true, allowUnknownVariables: b.allowUnknownVariables,
    audience: audienceValuesOf(b.audience),
    ab: abValuesOf(b),
  };
}

function valuesFromForm(body: unknown): DraftValues {
  return {
    name: str(body, "name"), subject: str(body, "subject"), previewText: str(body, "previewText"),
    fromEmail: str(body, "fromEmail"), fromName: str(body, "fromName"), replyTo: str(body, "replyTo"),
    html: str(body, "html"), text: str(body, "text"),
    trackOpens: str(body, "trackOpens") === "on", trackClicks: str(body, "trackClicks") === "on",
    allowUnknownVariables: str(body, "allowUnknownVariables") === "on",
    audience: audienceFromForm(body),
    ab: abFromForm(body),
  };
}

function rpcFields(v: DraftValues) {
  return {
    name: v.name, subject: v.subject, previewText: v.previewText, fromEmail: v.fromEmail, fromName: v.fromName,
    html: v.html, text: v.text,
    replyTo: v.replyTo.split(",").map((s) => s.trim()).filter(Boolean),
    audience: audienceRpc(v.audience),
    settings: { trackOpens: v.trackOpens, trackClicks: v.trackClicks },
    allowUnknownVariables: v.allowUnknownVariables,
    abTest: abRpc(v.ab),
  };
}

const input = (name: string, label: string, value: string, extra = "", hint = "") =>
  `<div class="field"><label for="f-${name}">${label}</label>${hint ? `<p class="muted" id="h-${name}" style="margin:0 0 .25rem">${hint}</p>` : ""}
<input id="f-${name}" name="${name}" value="${escapeHtml(value)}" style="width:100%"${hint ? ` aria-describedby="h-${name}"` : ""} ${extra}></div>`;
const check = (name: string, label: string, on: boolean) =>
  `<div class="field check"><input type="checkbox" id="f-${name}" name="${name}"${on ? " checked" : ""}><label for="f-${name}">${label}</label></div>`;

function draftForm(action: string, v: DraftValues, csrf: string, submit: string, picker: PickerContext): string {
  return `<form method="post" action="${action}" class="card">${csrf}
${input("name", "Name (only you see it)", v.name, "required maxlength=200")}
${input("subject", "Subject", v.subject, "required", "Merge contact data with {{firstName}}, {{email}} or a property: {{plan}}.")}
${input("previewText", "Preview text (shown after the subject in inboxes)", v.previewText)}
<div class="grid">${input("fromName", "From name", v.fromName, "required")}${input("fromEmail", "From address", v.fromEmail, 'required type="email"', "A verified address, or one on a verified domain.")}</div>
${input("replyTo", "Reply-to (optional, comma separated)", v.replyTo)}
<div class="field"><label for="f-html">HTML</label><textarea id="f-html" name="html" required rows="14">${escapeHtml(v.html)}</textarea></div>
<div class="field"><label for="f-text">Plain text (optional: made from the HTML when empty)</label><textarea id="f-text" name="text" rows="5">${escapeHtml(v.text)}</textarea></div>
${audiencePickerHtml(v.audience, picker)}
<fieldset class="field"><legend>Tracking</legend>
${check("trackOpens", "Track opens", v.trackOpens)}${check("trackClicks", "Track clicks", v.trackClicks)}
${check("allowUnknownVariables", "Allow merge fields that are not contact properties (they render empty)", v.allowUnknownVariables)}</fieldset>
${abFormHtml(v.ab)}
<div class="actions"><button type="submit">${submit}</button><a class="button secondary" href="${consoleUrl("/broadcasts")}">Back to broadcasts</a></div></form>`;
}

/** A 4xx from the broadcast service becomes the form again with what was typed and why. */
function formError(err: unknown): Flash {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message };
}

export function registerBroadcastPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  // Read when a request needs it: registering the pages touches no service client.
  const rpc = () => deps.clients.broadcast;

  /** Groups, segments and topics for the audience picker (none when the directory does not answer). */
  const pickerContext = async (request: FastifyRequest): Promise<PickerContext> => {
    const [groups, segments, topics] = await Promise.all([
      workspaceGroups(deps, request).catch(() => []),
      workspaceSegments(deps, request).catch(() => []),
      workspaceTopics(deps, request).catch(() => []),
    ]);
    return { groups, segments, topics };
  };

  /** The broadcast; with `countAudience` also its audience counted now (one directory count: the pages, not the polls). */
  const load = async (request: FastifyRequest, id: string, countAudience = false): Promise<Broadcast> => {
    if (!ID.test(id)) throw refusal({ code: "broadcast_not_found", status: 404, message: `Broadcast ${id} not found` });
    const { broadcast } = await rpc().getBroadcast({ workspaceId: sessionOf(request).workspaceId, id, countAudience }, rpcOptions(request));
    if (!broadcast) throw refusal({ code: "broadcast_not_found", status: 404, message: `Broadcast ${id} not found` });
    return broadcast;
  };
  const editable = (request: FastifyRequest) => {
    if (!sessionOf(request).canEdit) throw refusal({ code: "forbidden", status: 403, message: "This console session is read only (api_read key)." });
  };

  scope.get("/broadcasts", async (request, reply) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listBroadcasts({ workspaceId: session.workspaceId, page: { limit: 25, cursor } }, rpcOptions(request));
    const rows = res.broadcasts.map((b) => {
      const p = b.progress;
      return `<tr><td data-label="Name"><a href="${consoleUrl(`/broadcasts/${b.id}`)}">${escapeHtml(b.name || b.id)}</a>${b.abTest ? ` ${statusBadge("A/B", "info")}` : ""}</td>
<td data-label="Status">${statusBadge(statusName(b.status), STATUS_TONE[statusName(b.status)] ?? "info")}</td>
<td data-label="Subject">${escapeHtml(b.subject)}</td>
<td data-label="Sent" class="num">${n(p?.sent)} / ${n(p?.recipients)}</td>
<td data-label="Created">${formatTime(b.createdAt && timestampDate(b.createdAt))}</td></tr>`;
    }).join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl("/broadcasts", { cursor: res.page.nextCursor })}">Older broadcasts</a></p>` : "";
    const body = `<h1>Broadcasts</h1>
<div class="actions">${session.canEdit ? `<a class="button" href="${consoleUrl("/broadcasts/new")}">New draft</a>` : ""}</div>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Broadcasts, newest first</caption>
<thead><tr><th>Name</th><th>Status</th><th>Subject</th><th class="num">Sent / recipients</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : `<p class="muted">No broadcasts yet.</p>`}`;
    return html(reply, consolePage({ title: "Broadcasts", session, active: "broadcasts", flash: request.consoleFlash, body }));
  });

  scope.get("/broadcasts/new", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const body = `<h1>New draft</h1>${draftForm(consoleUrl("/broadcasts"), EMPTY, csrfField(session), "Save draft", await pickerContext(request))}`;
    return html(reply, consolePage({ title: "New draft", session, active: "broadcasts", body }));
  });

  scope.post("/broadcasts", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = valuesFromForm(request.body);
    try {
      const res = await rpc().createBroadcast({ workspaceId: session.workspaceId, ...rpcFields(values) }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Draft saved.${res.warnings.length ? ` Note: ${res.warnings.join(", ")}` : ""}` });
      return seeOther(reply, consoleUrl(`/broadcasts/${res.broadcast!.id}`));
    } catch (err) {
      const flash = formError(err);
      const body = `<h1>New draft</h1>${draftForm(consoleUrl("/broadcasts"), values, csrfField(session), "Save draft", await pickerContext(request))}`;
      return html(reply, consolePage({ title: "New draft", session, active: "broadcasts", flash, body }), bodyFromError(err).statusCode);
    }
  });

  scope.get<{ Params: { id: string } }>("/broadcasts/:id", async (request, reply) => {
    const b = await load(request, request.params.id, true);
    if (b.status !== BroadcastStatus.DRAFT) return html(reply, await progressPage(request, b));
    const contact = str(request.query, "contact").trim();
    return html(reply, await draftPage(request, b, valuesOf(b), contact, request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    const values = valuesFromForm(request.body);
    try {
      await rpc().updateBroadcast({ workspaceId: session.workspaceId, id: b.id, ...rpcFields(values) }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Draft saved." });
      return seeOther(reply, consoleUrl(`/broadcasts/${b.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await draftPage(request, b, values, "", flash), bodyFromError(err).statusCode);
    }
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id/test", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    const emails = [...all(request.body, "member"), ...str(request.body, "emails").split(/[\s,;]+/)].map((e) => e.trim()).filter(Boolean);
    try {
      const res = await rpc().sendTest({ workspaceId: session.workspaceId, id: b.id, emails }, rpcOptions(request));
      const variants = b.abTest?.variants.length ?? 0;
      setFlash(reply, { kind: "ok", message: `Test sent to ${res.sentTo.join(", ")}${variants ? ` (each gets all ${variants} variants)` : ""}.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#test`);
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id/schedule", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    const method = str(request.body, "deliveryMethod");
    const when = str(request.body, "when");
    const at = str(request.body, "sendAt");
    let sendAt: Date | undefined;
    if (when === "later") {
      // datetime-local has no zone: the form says UTC, so read it as UTC.
      sendAt = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(at) ? new Date(`${at}Z`) : undefined;
      if (!sendAt || Number.isNaN(sendAt.getTime())) {
        setFlash(reply, { kind: "error", message: "Give a send time (date and time, UTC) or choose to send now." });
        return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#schedule`);
      }
    }
    const methodValue = METHODS.some((m) => m.value === method) ? DeliveryMethod[method as keyof typeof DeliveryMethod] : DeliveryMethod.UNSPECIFIED;
    // While the pre-send check finds errors, a page lists them and asks again (broadcast-check.ts).
    if (await confirmScheduleDespiteErrors(deps, request, reply, b)) return reply;
    try {
      const res = await rpc().scheduleBroadcast(
        { workspaceId: session.workspaceId, id: b.id, sendAt: sendAt && timestampFromDate(sendAt), deliveryMethod: methodValue },
        rpcOptions(request),
      );
      const s = res.broadcast!;
      const at = s.scheduledAt ? timestampDate(s.scheduledAt) : undefined;
      // A send time in the past or within a few seconds is "now": sending starts at once.
      const soon = !at || at.getTime() <= Date.now() + 5_000;
      const method = methodName(s.deliveryMethod);
      setFlash(reply, { kind: "ok", message: soon ? `Scheduled (${method}): sending starts now, ${timeText(at ?? new Date())}.` : `Scheduled (${method}) for ${timeText(at)}.` });
      return seeOther(reply, consoleUrl(`/broadcasts/${b.id}`));
    } catch (err) {
      setFlash(reply, formError(err));
      return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#schedule`);
    }
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id/cancel", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    try {
      const res = await rpc().cancelBroadcast({ workspaceId: session.workspaceId, id: b.id }, rpcOptions(request));
      const stopped = res.broadcast?.status !== BroadcastStatus.DRAFT;
      setFlash(reply, { kind: "ok", message: stopped ? "A/B test cancelled: the rest of the audience will not get this broadcast." : "Cancelled: the broadcast is a draft again." });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, consoleUrl(`/broadcasts/${b.id}`));
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id/ab/winner", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    const variant = Number(str(request.body, "variant"));
    try {
      await rpc().chooseAbWinner({ workspaceId: session.workspaceId, id: b.id, variant: Number.isInteger(variant) && variant >= 0 && variant < 4 ? variant : -1 }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Variant ${variantName(variant)} goes to the rest of the audience now.` });
    } catch (err) {
      setFlash(reply, formError(err));
    }
    return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#ab`);
  });

  scope.get<{ Params: { id: string } }>("/broadcasts/:id/progress.json", async (request, reply) => {
    const b = await load(request, request.params.id);
    const points = await timeline(request, b.id);
    return reply.send({
      status: statusName(b.status),
      statusText: statusWords(statusName(b.status)),
      counters: countersOf(b),
      chart: progressChart(points, `Progress of ${b.name}`, chartWindow(b)),
      ...(b.abTest ? { ab: abProgressHtml(b, abOptions(request, b)) } : {}),
    });
  });

  /** The A/B section's options: its "send this one now" forms for an editing session. */
  function abOptions(request: FastifyRequest, b: Broadcast) {
    const session = sessionOf(request);
    return session.canEdit
      ? { chooseAction: consoleUrl(`/broadcasts/${b.id}/ab/winner`), csrf: csrfField(session), formatTime }
      : { formatTime };
  }

  async function timeline(request: FastifyRequest, id: string): Promise<ChartPoint[]> {
    const res = await rpc().getBroadcastTimeline({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    return res.points.map((p) => ({ at: p.at ? timestampDate(p.at) : new Date(0), sent: n(p.sent), delivered: n(p.delivered), opened: n(p.opened), clicked: n(p.clicked), planned: n(p.planned) }));
  }

  async function draftPage(request: FastifyRequest, b: Broadcast, values: DraftValues, contact: string, flash?: Flash): Promise<string> {
    const session = sessionOf(request);
    const audienceCount = b.audienceCount === undefined ? undefined : Number(b.audienceCount);
    const opts = rpcOptions(request);
    // An A/B test's draft: every variant as its share receives it (the base fields alone go to nobody).
    const variants = b.abTest?.variants.length ? b.abTest.variants.map((_, i) => i) : [undefined];
    const [previews, contacts, members] = await Promise.all([
      Promise.all(variants.map((variant) => rpc().previewBroadcast({ workspaceId: session.workspaceId, id: b.id, contactEmail: contact, variant }, opts).then(
        (p) => ({ ok: true as const, p, variant }),
        (err) => ({ ok: false as const, message: bodyFromError(err).message, variant }),
      ))),
      deps.clients.directory.listContacts({ workspaceId: session.workspaceId, page: { limit: 50 } }, opts).then((r) => r.contacts, () => []),
      deps.clients.directory.listMembers({ workspaceId: session.workspaceId }, opts).then((r) => r.emails, () => [] as string[]),
    ]);
    const base = consoleUrl(`/broadcasts/${b.id}`);
    const first = previews[0];
    const notice = first.ok
      ? `${contact && !first.p.contactFound ? `<p class="flash error" role="status">No contact with the address ${escapeHtml(contact)}: merge fields show sample values, their names in brackets.</p>` : ""}
${!contact ? `<p class="muted" data-preview-sample>No contact chosen: merge fields show sample values, their names in brackets (<code>[firstName]</code>). Choose a contact to see their data.</p>` : ""}`
      : "";
    const previewHtml = notice + previews.map((preview) => {
      const name = preview.variant === undefined ? "" : `Variant ${variantName(preview.variant)}`;
      const shown = preview.ok
        ? `<dl class="grid"><div><dt class="muted">Subject</dt><dd data-preview-subject style="margin:0;font-weight:600">${escapeHtml(preview.p.subject)}</dd></div>
<div><dt class="muted">Preview text</dt><dd style="margin:0">${escapeHtml(preview.p.previewText) || "—"}</dd></div></dl>
<iframe class="mail" title="Preview of the email${name ? ` (${name})` : ""}${contact ? ` for ${escapeHtml(contact)}` : ""}" sandbox srcdoc="${escapeHtml(preview.p.html)}"></iframe>
<details><summary>Plain text version</summary><pre>${escapeHtml(preview.p.text)}</pre></details>`
        : `<p class="flash error" role="alert">The preview${name ? ` of ${name}` : ""} could not be made: ${escapeHtml(preview.message)}</p>`;
      return name ? `<section data-preview-variant="${preview.variant}" aria-label="${name}"><h3>${name}</h3>${shown}</section>` : shown;
    }).join("\n");
    const options = contacts.map((c) => `<option value="${escapeHtml(c.email)}">${escapeHtml([c.firstName, c.lastName].filter(Boolean).join(" "))}</option>`).join("");
    const csrf = csrfField(session);
    const memberBoxes = members.length
      ? members.map((m, i) => `<div class="check"><input type="checkbox" id="m-${i}" name="member" value="${escapeHtml(m)}"><label for="m-${i}">${escapeHtml(m)}</label></div>`).join("")
      : `<p class="muted">This workspace has no members yet; test sends go to members only.</p>`;
    const methods = METHODS.map((m, i) => `<div class="field"><input type="radio" id="dm-${m.value}" name="deliveryMethod" value="${m.value}"${i === 1 ? " checked" : ""} aria-describedby="dm-${m.value}-h" style="min-height:auto">
<label for="dm-${m.value}" style="display:inline">${m.label} (${m.value})</label><p class="muted" id="dm-${m.value}-h" style="margin:.1rem 0 0 1.6rem">${escapeHtml(m.explain)}</p></div>`).join("");
    const body = `<h1>${escapeHtml(b.name)} ${statusBadge("DRAFT", "info")}</h1>
<p class="muted">Created ${formatTime(b.createdAt && timestampDate(b.createdAt))} · last saved ${formatTime(b.updatedAt && timestampDate(b.updatedAt))}</p>
<div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(min(100%,26rem),1fr))">
<section aria-labelledby="edit-h"><h2 id="edit-h">Edit</h2>${session.canEdit ? draftForm(base, values, csrf, "Save draft", { ...(await pickerContext(request)), count: audienceCount }) : `<p class="muted">Read-only session.</p>`}</section>
<section aria-labelledby="preview-h"><h2 id="preview-h">Preview</h2>
<form method="get" action="${base}" class="row card"><div class="field" style="flex:1"><label for="contact">Preview for contact (email)</label>
<input id="contact" name="contact" type="email" list="contact-list" value="${escapeHtml(contact)}" style="width:100%" placeholder="someone@example.com"><datalist id="contact-list">${options}</datalist></div>
<div class="field"><button type="submit" class="secondary">Show preview</button></div></form>
${previewHtml}
${await checkPanelHtml(deps, request, b, contact)}
<p class="muted">The preview is the saved draft${b.abTest?.variants.length ? ", every variant of its A/B test" : ""}. Tracking is off in previews, so nothing here counts as an open or click.</p></section></div>
${session.canEdit ? `<section aria-labelledby="test-h" id="test"><h2 id="test-h">Send a test</h2>
<form method="post" action="${base}/test" class="card">${csrf}<fieldset><legend>Workspace members to send to (up to 10)</legend>${memberBoxes}</fieldset>
<p class="muted">${b.abTest?.variants.length ? `Each member gets every variant: ${b.abTest.variants.map((_, i) => `"[TEST ${variantName(i)}]"`).join(", ")} before the subject.` : `The test carries "[TEST]" before the subject.`} It is merged with the member's contact data when there is one, and is not counted.</p>
<div class="actions"><button type="submit" class="secondary">Send test</button></div></form></section>
<section aria-labelledby="schedule-h" id="schedule"><h2 id="schedule-h">Send or schedule</h2>
<form method="post" action="${base}/schedule" class="card" data-confirm="Send this broadcast to your audience${audienceCount === undefined ? "" : ` (${audienceCount} contacts now)`}?">${csrf}
<p id="schedule-audience">${audienceCount === undefined ? "The audience is counted when sending starts." : `The saved audience holds <strong>${audienceCount}</strong> ${audienceCount === 1 ? "contact" : "contacts"} now (subscribed, not suppressed); it is resolved again when sending starts.`}</p>
<fieldset class="field"><legend>When</legend>
<div><input type="radio" id="when-now" name="when" value="now" checked style="min-height:auto"> <label for="when-now" style="display:inline">Now</label></div>
<div><input type="radio" id="when-later" name="when" value="later" style="min-height:auto"> <label for="when-later" style="display:inline">Later, at:</label></div>
<label for="sendAt" class="sr-only">Send time (UTC)</label><input type="datetime-local" id="sendAt" name="sendAt" aria-describedby="sendAt-h"> <span class="muted" id="sendAt-h">UTC, at most 90 days ahead</span></fieldset>
<fieldset class="field"><legend>Delivery method</legend>${methods}</fieldset>
<div class="actions"><button type="submit">Schedule</button></div></form></section>` : ""}`;
    return consolePage({ title: b.name || "Draft", session, active: "broadcasts", flash, body });
  }

  async function progressPage(request: FastifyRequest, b: Broadcast): Promise<string> {
    const session = sessionOf(request);
    const status = statusName(b.status);
    const points = await timeline(request, b.id);
    const counters = countersOf(b);
    const done = b.status === BroadcastStatus.COMPLETED;
    const base = consoleUrl(`/broadcasts/${b.id}`);
    const cells = COUNTERS.map(([key, label]) =>
      `<div class="card" style="margin:0"><div class="muted">${label}</div><div style="font-size:1.6rem;font-weight:700" data-counter="${key}">${counters[key]}</div></div>`).join("");
    const abWaiting = b.abTest?.state === "waiting" && b.abTest.winner === undefined;
    const cancel = b.status === BroadcastStatus.SCHEDULED && session.canEdit
      ? `<form id="cancel" method="post" action="${base}/cancel" data-confirm="Cancel this scheduled broadcast?">${csrfField(session)}<button class="danger" type="submit">Cancel and edit</button></form>`
      : abWaiting && session.canEdit
        ? `<form id="cancel" data-ab-cancel method="post" action="${base}/cancel" data-confirm="Stop here: the rest of the audience does not get this broadcast?">${csrfField(session)}<button class="danger" type="submit">Cancel the rest</button></form>`
        : "";
    // Without JS the page refreshes itself while sending; with JS it polls the JSON instead,
    // and reloads once at the end so the completion time and final counters are the server's.
    const refresh = done ? "" : `<noscript><meta http-equiv="refresh" content="5"></noscript>`;
    const script = done ? "" : `<script>(function(){var url=${JSON.stringify(`${base}/progress.json`)};var st=document.querySelector("[data-status]");
function tick(){fetch(url,{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return;
Object.keys(d.counters).forEach(function(k){var e=document.querySelector('[data-counter="'+k+'"]');if(e)e.textContent=d.counters[k]});
document.getElementById("chart").innerHTML=d.chart;var ab=document.getElementById("ab");if(ab&&d.ab&&!ab.contains(document.activeElement))ab.outerHTML=d.ab;st.textContent=d.statusText||d.status;st.className="badge "+(d.status==="COMPLETED"?"ok":"warn");var c=document.getElementById("cancel");if(c&&d.status!=="SCHEDULED"&&!(c.hasAttribute("data-ab-cancel")&&d.ab&&d.ab.indexOf('data-ab-state="waiting"')>=0))c.remove();
if(d.status!=="COMPLETED")setTimeout(tick,2000);else{document.getElementById("live").textContent="Sending is complete.";setTimeout(function(){location.reload()},1500)}}).catch(function(){setTimeout(tick,5000)})}
setTimeout(tick,2000)})();</script>`;
    const body = `${refresh}<h1>${escapeHtml(b.name)} <span class="badge ${STATUS_TONE[status] ?? "info"}" data-status>${escapeHtml(statusWords(status))}</span></h1>
<p class="muted">Subject: ${escapeHtml(b.subject)} · method ${escapeHtml(methodName(b.deliveryMethod) || "—")} · scheduled <span data-scheduled>${formatTime(b.scheduledAt && timestampDate(b.scheduledAt))}</span>
· started <span data-started>${formatTime(b.sentAt && timestampDate(b.sentAt))}</span> · completed <span data-completed>${formatTime(b.completedAt && timestampDate(b.completedAt))}</span></p>
${b.pauseReason === "ab_test_cancelled" ? `<p class="flash error" role="alert">A/B test cancelled during the wait: the rest of the audience does not get this broadcast.</p>`
  : b.pauseReason ? `<p class="flash error" role="alert">Releasing stopped early: ${escapeHtml(b.pauseReason)}.</p>` : ""}
<p id="live" role="status" aria-live="polite" class="muted">${done ? "Sending is complete." : `Updates every few seconds. <a href="${base}">Reload</a>`}</p>
<section aria-labelledby="counters-h"><h2 id="counters-h">Counters</h2><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(9rem,1fr))">${cells}</div></section>
${abProgressHtml(b, abOptions(request, b))}
<section aria-labelledby="chart-h"><h2 id="chart-h">Over time</h2><div class="card" id="chart">${progressChart(points, `Progress of ${b.name}`, chartWindow(b))}</div></section>
<div class="actions">${cancel}<a class="button secondary" href="${consoleUrl("/broadcasts")}">Back to broadcasts</a></div>${script}`;
    return consolePage({ title: b.name || "Broadcast", session, active: "broadcasts", flash: request.consoleFlash, body });
  }
}

/** The chart's time axis: from when sending started (or was scheduled to) to completion. */
function chartWindow(b: Broadcast): ChartWindow {
  const start = b.sentAt ?? b.scheduledAt;
  return { start: start && timestampDate(start), completedAt: b.completedAt && timestampDate(b.completedAt) };
}

const COUNTERS = [
  ["recipients", "Recipients"], ["sent", "Sent"], ["delivered", "Delivered"], ["opened", "Opened"], ["clicked", "Clicked"],
  ["bounced", "Bounced"], ["failed", "Failed"], ["suppressed", "Suppressed"], ["unsubscribed", "Unsubscribed"],
  // DESIGN §10.4: recipients whose reply the inbound unit matched to this broadcast.
  ["replied", "Replied"],
] as const;

function countersOf(b: Broadcast): Record<(typeof COUNTERS)[number][0], number> {
  const p = b.progress;
  return Object.fromEntries(COUNTERS.map(([k]) => [k, n(p?.[k])])) as Record<(typeof COUNTERS)[number][0], number>;
}
