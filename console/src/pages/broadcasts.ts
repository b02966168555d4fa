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
 * simply not found (a 404 page). The markup is views/broadcasts.ts; the draft form is parsed
 * with the /v1 routes' schemas (pages/broadcasts-form.ts).
 */
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BroadcastStatus, type Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { methodOf, scheduleBroadcastRequestSchema, testBroadcastRequestSchema } from "@mailroom/http/broadcasts-schema.js";
import { bodyFromError, invalid, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, formatTime, statusWords, timeText, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { all, html, str } from "../form-values.js";
import { workspaceGroups, workspaceSegments } from "../segments.js";
import { workspaceTopics } from "../topics.js";
import { render } from "../views/html.js";
import { progressChart, type ChartPoint, type ChartWindow } from "../views/broadcasts-chart.js";
import type { PickerContext } from "../views/audience-picker.js";
import { abProgressView, variantName } from "../views/broadcasts-ab.js";
import {
  broadcastListView, countersOf, draftPageView, methodName, newDraftView, progressPageView, statusName, type Preview,
} from "../views/broadcasts.js";
import { EMPTY_DRAFT, draftRequest, draftValuesFromForm, draftValuesOf, type DraftValues } from "./broadcasts-form.js";
import { checkPanel, confirmScheduleDespiteErrors } from "./broadcast-check.js";

const n = (v: bigint | undefined) => Number(v ?? 0n);
const ID = /^cmp_[0-9a-z]{26}$/;

/** A 4xx from the broadcast service (or the form's schema) becomes the form again with what was typed and why. */
function formError(err: unknown): Flash {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message };
}

export function registerBroadcastPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  // Read when a request needs it: registering the pages touches no service client.
  const rpc = () => deps.clients.broadcast;

  /** Groups, segments and topics for the audience picker (none when the audience unit does not answer). */
  const pickerContext = async (request: FastifyRequest): Promise<PickerContext> => {
    const [groups, segments, topics] = await Promise.all([
      workspaceGroups(deps, request).catch(() => []),
      workspaceSegments(deps, request).catch(() => []),
      workspaceTopics(deps, request).catch(() => []),
    ]);
    return { groups, segments, topics };
  };

  /** The broadcast; with `countAudience` also its audience counted now (one audience count: the pages, not the polls). */
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
    const body = render(broadcastListView(res.broadcasts, session.canEdit, res.page?.hasMore ? res.page.nextCursor : undefined));
    return html(reply, consolePage({ title: "Broadcasts", session, active: "broadcasts", flash: request.consoleFlash, body }));
  });

  scope.get("/broadcasts/new", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const body = render(newDraftView(EMPTY_DRAFT, csrfField(session), await pickerContext(request)));
    return html(reply, consolePage({ title: "New draft", session, active: "broadcasts", body }));
  });

  scope.post("/broadcasts", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = draftValuesFromForm(request.body);
    try {
      const res = await rpc().createBroadcast({ workspaceId: session.workspaceId, ...draftRequest(values) }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Draft saved.${res.warnings.length ? ` Note: ${res.warnings.join(", ")}` : ""}` });
      return seeOther(reply, consoleUrl(`/broadcasts/${res.broadcast!.id}`));
    } catch (err) {
      const flash = formError(err);
      const body = render(newDraftView(values, csrfField(session), await pickerContext(request)));
      return html(reply, consolePage({ title: "New draft", session, active: "broadcasts", flash, body }), bodyFromError(err).statusCode);
    }
  });

  scope.get<{ Params: { id: string } }>("/broadcasts/:id", async (request, reply) => {
    const b = await load(request, request.params.id, true);
    if (b.status !== BroadcastStatus.DRAFT) return html(reply, await progressPage(request, b));
    const contact = str(request.query, "contact").trim();
    return html(reply, await draftPage(request, b, draftValuesOf(b), contact, request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/broadcasts/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const b = await load(request, request.params.id);
    const values = draftValuesFromForm(request.body);
    try {
      await rpc().updateBroadcast({ workspaceId: session.workspaceId, id: b.id, ...draftRequest(values) }, rpcOptions(request));
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
      // The /v1 test route's schema (the service checks the addresses and their number).
      const parsed = testBroadcastRequestSchema.safeParse({ emails });
      if (!parsed.success) throw refusal({ ...invalid(parsed.error), code: "invalid_test_recipients", status: 400 });
      const res = await rpc().sendTest({ workspaceId: session.workspaceId, id: b.id, emails: parsed.data.emails }, rpcOptions(request));
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
    const when = str(request.body, "when");
    const at = str(request.body, "sendAt");
    // datetime-local has no zone: the form says UTC, so it is read as UTC.
    if (when === "later" && !(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(at) && !Number.isNaN(new Date(`${at}Z`).getTime()))) {
      setFlash(reply, { kind: "error", message: "Give a send time (date and time, UTC) or choose to send now." });
      return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#schedule`);
    }
    // The /v1 schedule route's schema: an unknown delivery method is refused by name.
    const parsed = scheduleBroadcastRequestSchema.safeParse({
      sendAt: when === "later" ? new Date(`${at}Z`).toISOString() : undefined,
      deliveryMethod: str(request.body, "deliveryMethod") || undefined,
    });
    if (!parsed.success) {
      setFlash(reply, { kind: "error", message: invalid(parsed.error).message });
      return seeOther(reply, `${consoleUrl(`/broadcasts/${b.id}`)}#schedule`);
    }
    const { sendAt, deliveryMethod } = parsed.data;
    // While the pre-send check finds errors, a page lists them and asks again (broadcast-check.ts).
    if (await confirmScheduleDespiteErrors(deps, request, reply, b)) return reply;
    try {
      const res = await rpc().scheduleBroadcast(
        { workspaceId: session.workspaceId, id: b.id, sendAt: sendAt ? timestampFromDate(new Date(sendAt)) : undefined, deliveryMethod: deliveryMethod ? methodOf(deliveryMethod) : undefined },
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
      chart: render(progressChart(points, `Progress of ${b.name}`, chartWindow(b))),
      ...(b.abTest ? { ab: render(abProgressView(b, abOptions(request, b))) } : {}),
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
        (p): Preview => ({ ok: true, p, variant }),
        (err): Preview => ({ ok: false, message: bodyFromError(err).message, variant }),
      ))),
      deps.clients.contacts.listContacts({ workspaceId: session.workspaceId, page: { limit: 50 } }, opts).then((r) => r.contacts, () => []),
      deps.clients.accounts.listMembers({ workspaceId: session.workspaceId }, opts).then((r) => r.emails, () => [] as string[]),
    ]);
    const body = draftPageView({
      broadcast: b, values, contact, previews, contacts, members, audienceCount,
      checkPanel: await checkPanel(deps, request, b, contact),
      edit: session.canEdit ? { csrf: csrfField(session), picker: await pickerContext(request) } : undefined,
    });
    return consolePage({ title: b.name || "Draft", session, active: "broadcasts", flash, body: render(body) });
  }

  async function progressPage(request: FastifyRequest, b: Broadcast): Promise<string> {
    const session = sessionOf(request);
    const points = await timeline(request, b.id);
    const body = progressPageView({
      broadcast: b,
      chart: progressChart(points, `Progress of ${b.name}`, chartWindow(b)),
      ab: abProgressView(b, abOptions(request, b)),
      csrf: session.canEdit ? csrfField(session) : undefined,
    });
    return consolePage({ title: b.name || "Broadcast", session, active: "broadcasts", flash: request.consoleFlash, body: render(body) });
  }
}

/** The chart's time axis: from when sending started (or was scheduled to) to completion. */
function chartWindow(b: Broadcast): ChartWindow {
  const start = b.sentAt ?? b.scheduledAt;
  return { start: start && timestampDate(start), completedAt: b.completedAt && timestampDate(b.completedAt) };
}
