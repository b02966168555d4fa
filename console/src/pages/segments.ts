/**
 * Segments pages (DESIGN §9.4): saved filters, built with rows of field / operator / value
 * (filter-builder.ts) that show how many contacts match as they change, or written as JSON.
 *
 *   GET  /segments[?cursor=]              list with counts
 *   GET  /segments/new                    builder
 *   POST /segments                        create (name, filter JSON)
 *   GET  /segments/count.json?filter=     { count } of a filter now (any status, as a segment
 *                                         counts), or 400 { error: { code: "invalid_filter", message } }
 *   GET  /segments/:id[?cursor=]          the segment: its count and contacts
 *   GET  /segments/:id/edit               builder with the saved filter
 *   POST /segments/:id                    save name and filter
 *   POST /segments/:id/delete
 *
 * The markup is views/segments.ts. The form stays the console's own (its filter is the builder's JSON text).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ID, editable, formError, html, notFoundUnless, str } from "../form-values.js";
import { builderFields, filterBuilderHtml } from "../filter-builder.js";
import { workspaceGroups } from "../segments.js";
import { render } from "../views/html.js";
import { prettyFilter, segmentEditorView, segmentListView, segmentView } from "../views/segments.js";

const PAGE = 25;
const MAX_FILTER_TEXT = 64 * 1024;

export function registerSegmentPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.audiences;

  const load = async (request: FastifyRequest, id: string): Promise<Segment> => {
    notFoundUnless(ID.segment.test(id), "segment_not_found", "segment");
    const { segment } = await rpc().getSegment({ workspaceId: sessionOf(request).workspaceId, segmentId: id }, rpcOptions(request));
    if (!segment) throw refusal({ code: "segment_not_found", status: 404, message: "No segment with this id exists in the workspace." });
    return segment;
  };

  const editorPage = async (request: FastifyRequest, opts: { segment?: Segment; name: string; filterJson: string; flash?: Flash }) => {
    const session = sessionOf(request);
    const [properties, groups] = await Promise.all([
      deps.clients.contacts.listContactProperties({ workspaceId: session.workspaceId }, rpcOptions(request)).then((r) => r.properties),
      workspaceGroups(deps, request),
    ]);
    const title = opts.segment ? `Edit ${opts.segment.name}` : "New segment";
    const builder = filterBuilderHtml({ fields: builderFields(properties, groups), filterJson: opts.filterJson, countUrl: consoleUrl("/segments/count.json") });
    const body = render(segmentEditorView({ segment: opts.segment, name: opts.name, builder, csrf: csrfField(session) }));
    return consolePage({ title, session, active: "segments", flash: opts.flash, body });
  };

  scope.get("/segments", async (request, reply) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listSegments({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request));
    const counts = await Promise.all(res.segments.map((s) =>
      rpc().countSegment({ workspaceId: session.workspaceId, segmentId: s.id }, rpcOptions(request)).then((r) => Number(r.count), () => undefined)));
    const body = render(segmentListView({ segments: res.segments, counts, nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined, canEdit: session.canEdit }));
    return html(reply, consolePage({ title: "Segments", session, active: "segments", flash: request.consoleFlash, body }));
  });

  scope.get("/segments/new", async (request, reply) => {
    editable(request);
    return html(reply, await editorPage(request, { name: "", filterJson: "{}" }));
  });

  scope.get("/segments/count.json", async (request, reply) => {
    const session = sessionOf(request);
    const filter = str(request.query, "filter").trim() || "{}";
    if (filter.length > MAX_FILTER_TEXT) return reply.code(400).send({ error: { code: "invalid_filter", message: "filter: too large" } });
    try {
      const res = await deps.clients.contacts.listContacts(
        { workspaceId: session.workspaceId, filter, includeCount: true, page: { limit: 1 } },
        rpcOptions(request),
      );
      return reply.send({ count: Number(res.totalCount ?? 0n) });
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return reply.code(e.statusCode).send({ error: { code: e.code, message: e.message } });
    }
  });

  scope.post("/segments", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const name = str(request.body, "name").trim();
    const filterJson = str(request.body, "filter").trim() || "{}";
    try {
      const { segment } = await rpc().createSegment({ workspaceId: session.workspaceId, name, filterJson }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Segment ${segment!.name} saved.` });
      return seeOther(reply, consoleUrl(`/segments/${segment!.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await editorPage(request, { name, filterJson, flash }), flash.status);
    }
  });

  scope.get<{ Params: { id: string } }>("/segments/:id", async (request, reply) => {
    const session = sessionOf(request);
    const s = await load(request, request.params.id);
    const opts = rpcOptions(request);
    const cursor = str(request.query, "cursor");
    const [count, page] = await Promise.all([
      rpc().countSegment({ workspaceId: session.workspaceId, segmentId: s.id }, opts),
      rpc().listSegmentContacts({ workspaceId: session.workspaceId, segmentId: s.id, page: { limit: PAGE, cursor } }, opts),
    ]);
    const body = render(segmentView({
      segment: s, count: Number(count.count), contacts: page.contacts, nextCursor: page.page?.hasMore ? page.page.nextCursor : undefined,
      canEdit: session.canEdit, csrf: csrfField(session),
    }));
    return html(reply, consolePage({ title: s.name, session, active: "segments", flash: request.consoleFlash, body }));
  });

  scope.get<{ Params: { id: string } }>("/segments/:id/edit", async (request, reply) => {
    editable(request);
    const s = await load(request, request.params.id);
    return html(reply, await editorPage(request, { segment: s, name: s.name, filterJson: prettyFilter(s.filterJson), flash: request.consoleFlash }));
  });

  scope.post<{ Params: { id: string } }>("/segments/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const s = await load(request, request.params.id);
    const name = str(request.body, "name").trim();
    const filterJson = str(request.body, "filter").trim() || "{}";
    try {
      await rpc().updateSegment({ workspaceId: session.workspaceId, segmentId: s.id, name, filterJson }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Segment saved." });
      return seeOther(reply, consoleUrl(`/segments/${s.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await editorPage(request, { segment: s, name, filterJson, flash }), flash.status);
    }
  });

  scope.post<{ Params: { id: string } }>("/segments/:id/delete", async (request, reply) => {
    editable(request);
    const s = await load(request, request.params.id);
    await rpc().deleteSegment({ workspaceId: sessionOf(request).workspaceId, segmentId: s.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Segment ${s.name} deleted.` });
    return seeOther(reply, consoleUrl("/segments"));
  });
}
