/**
 * Automations pages (DESIGN §9.6): the list with status, version and run counts; one
 * automation as a vertical flow of its steps with live counts per step and its recent runs;
 * the editor, a form per step (automation-form.ts), with a raw JSON editor beside it. The
 * markup is views/automations.ts, views/automation-form.ts and views/automation-flow.ts.
 *
 *   GET  /automations[?cursor=]           list, with activate / pause / delete
 *   GET  /automations/new                 the editor, empty
 *   POST /automations                     the editor's buttons; "save" creates (DRAFT)
 *   GET  /automations/:id[?runs=]         the flow with counts, and recent runs
 *   GET  /automations/:id/stats.json      what the flow polls: { status, version, runs, steps: { <stepId>: counts } }
 *   GET  /automations/:id/edit            the editor with the current version
 *   POST /automations/:id                 the editor's buttons; "save" makes a new version
 *   POST /automations/:id/activate | /pause | /delete   (field `back`: "list" returns to the list)
 *
 * A definition is checked with the /v1 route's schema (its shape), then by the automation unit
 * (everything else); either names the JSON path (`steps[1].then[0].template: …`), which the
 * editor shows inside that step.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Automation } from "@mailroom/proto/automation/v1/automation_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, statusWords } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { editable, html, str } from "../form-values.js";
import { builderFields } from "../filter-builder.js";
import { workspaceGroups } from "../segments.js";
import type { Names, StepCounts } from "../views/automation-flow.js";
import { automationFormView } from "../views/automation-form.js";
import { runsTable } from "../views/automation-runs.js";
import { render } from "../views/html.js";
import {
  EVERY, MAX_VERSIONS_SUMMED, automationListView, automationPageView, definitionOf, editorPageView, statusName,
  type FlowStats, type VersionChoice,
} from "../views/automations.js";
import {
  applyOp, definitionFromJson, definitionOfDraft, definitionRequest, draftFromDefinition, draftFromForm, draftJson, emptyDraft,
  type Built, type FormDraft,
} from "./automation-form.js";

/** aut_ then the unit's id; anything else is not sent to the service. */
const AUTOMATION_ID = /^aut_[0-9A-Za-z_-]{1,64}$/;
const n = (v: bigint | undefined) => Number(v ?? 0n);
/** A group's name in words and pickers (as the groups page shows it). */
const groupLabel = (g: { displayName: string; publicId: string }) => g.displayName || g.publicId;

/** The JSON path an invalid_automation error names: extra.path, else the message's head. */
function errorPath(err: unknown, message: string): string {
  const extra = errorInfoOf(err)?.extra.path;
  if (extra) {
    try {
      const p = JSON.parse(extra);
      if (typeof p === "string") return p;
    } catch {
      return extra;
    }
  }
  const head = /^((?:name|trigger|steps|reentry)[\w.[\]]*):/.exec(message);
  return head ? head[1] : "";
}

export function registerAutomationPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.automation;

  const load = async (request: FastifyRequest, id: string): Promise<Automation> => {
    if (!AUTOMATION_ID.test(id)) throw refusal({ code: "automation_not_found", status: 404, message: "No automation with this id exists in the workspace." });
    const { automation } = await rpc().getAutomation({ workspaceId: sessionOf(request).workspaceId, automationId: id }, rpcOptions(request));
    if (!automation) throw refusal({ code: "automation_not_found", status: 404, message: "No automation with this id exists in the workspace." });
    return automation;
  };

  /** Group names for the words and the pickers; the page works without them. */
  const groupsOf = (request: FastifyRequest) => workspaceGroups(deps, request).catch(() => []);
  const namesOf = async (request: FastifyRequest): Promise<Names> =>
    ({ groups: new Map((await groupsOf(request)).map((g) => [g.id, groupLabel(g)])) });

  // --- list ---------------------------------------------------------------------------------

  scope.get("/automations", async (request, reply) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const [res, names] = await Promise.all([
      rpc().listAutomations({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request)),
      namesOf(request),
    ]);
    const body = render(automationListView(res.automations, names, session.canEdit ? csrfField(session) : undefined, res.page?.hasMore ? res.page.nextCursor : undefined));
    return html(reply, consolePage({ title: "Automations", session, active: "automations", flash: request.consoleFlash, body }));
  });

  // --- editor ---------------------------------------------------------------------------------

  interface EditorState {
    automation?: Automation;
    draft: FormDraft;
    error?: { path: string; message: string };
    focus?: string;
    definitionJson?: string;
    jsonOpen?: boolean;
  }

  const editorPage = async (request: FastifyRequest, state: EditorState): Promise<string> => {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [properties, groups, templates] = await Promise.all([
      deps.clients.contacts.listContactProperties({ workspaceId: session.workspaceId }, opts).then((r) => r.properties, () => []),
      groupsOf(request),
      deps.clients.templates.listTemplates({ workspaceId: session.workspaceId, page: { limit: 100 }, kind: "template" }, opts).then((r) => r.templates.map((t) => t.name), () => []),
    ]);
    const a = state.automation;
    const title = a ? `Edit ${a.name}` : "New automation";
    const form = automationFormView(state.draft, {
      action: a ? consoleUrl(`/automations/${a.id}`) : consoleUrl("/automations"),
      cancelUrl: a ? consoleUrl(`/automations/${a.id}`) : consoleUrl("/automations"),
      csrf: csrfField(session),
      submitLabel: a ? "Save as a new version" : "Create automation",
      templates,
      groups: groups.map((g) => ({ id: g.id, label: groupLabel(g) })),
      filterFields: builderFields(properties, groups),
      countUrl: consoleUrl("/segments/count.json"),
      error: state.error,
      focus: state.focus,
      definitionJson: state.definitionJson ?? draftJson(state.draft),
      jsonOpen: state.jsonOpen,
    });
    return consolePage({ title, session, active: "automations", body: render(editorPageView(title, a, form)) });
  };

  /** Every button of the editor: move, add, remove, change type (the form again), or save. */
  const editorPost = async (request: FastifyRequest, reply: FastifyReply, automation?: Automation) => {
    const session = sessionOf(request);
    editable(request);
    const body = request.body;
    const op = str(body, "op") || "save";
    const draft = draftFromForm(body);
    if (op !== "save" && op !== "json") {
      const focus = applyOp(draft, op, body);
      return html(reply, await editorPage(request, { automation, draft, focus }));
    }
    const typedJson = str(body, "definition");
    const built: Built = op === "json" ? definitionFromJson(draft.name, typedJson) : definitionOfDraft(draft);
    // The JSON editor's draft is what the JSON says, so an error points into the steps it names.
    const shown = op === "json" && built.ok ? draftFromDefinition(draft.name, built) : draft;
    const again = (error: { path: string; message: string }, status: number) =>
      editorPage(request, {
        automation, draft: shown, error, definitionJson: op === "json" ? typedJson : undefined, jsonOpen: op === "json",
      }).then((page) => html(reply, page, status));
    if (!built.ok) return again({ path: built.path, message: built.message }, 400);
    // The /v1 route's schema checks the definition's shape before the unit checks the rest.
    const request_ = definitionRequest(built, automation !== undefined);
    if (!request_.ok) return again({ path: request_.path, message: request_.message }, 400);
    const { texts } = request_;
    try {
      const saved = automation
        ? (await rpc().updateAutomation({ workspaceId: session.workspaceId, automationId: automation.id, ...texts }, rpcOptions(request))).automation
        : (await rpc().createAutomation({ workspaceId: session.workspaceId, ...texts }, rpcOptions(request))).automation;
      setFlash(reply, { kind: "ok", message: automation ? `Saved: ${saved!.name} is now version ${saved!.version}.` : `Automation ${saved!.name} created as a draft.` });
      return seeOther(reply, consoleUrl(`/automations/${saved!.id}`));
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      const path = errorPath(err, e.message);
      const message = path && e.message.startsWith(`${path}:`) ? e.message.slice(path.length + 1).trim() : e.message;
      return again({ path: path || "definition", message }, e.statusCode);
    }
  };

  scope.get("/automations/new", async (request, reply) => {
    editable(request);
    return html(reply, await editorPage(request, { draft: emptyDraft() }));
  });

  scope.post("/automations", async (request, reply) => editorPost(request, reply));

  scope.get<{ Params: { id: string } }>("/automations/:id/edit", async (request, reply) => {
    editable(request);
    const a = await load(request, request.params.id);
    return html(reply, await editorPage(request, { automation: a, draft: draftFromDefinition(a.name, definitionOf(a)) }));
  });

  scope.post<{ Params: { id: string } }>("/automations/:id", async (request, reply) => editorPost(request, reply, await load(request, request.params.id)));

  // --- one automation ---------------------------------------------------------------------------

  /**
   * The counts per step id of one version, or (EVERY) of every version summed: runs finish on
   * the version they started on, so after a save the runs still waiting in a step of the
   * previous version count there too (the current version's alone showed "waiting 0").
   * Steps of the versions shown that the current flow no longer has come back in `gone`.
   */
  const statsOf = async (request: FastifyRequest, a: Automation, wanted: VersionChoice): Promise<FlowStats> => {
    const versions = wanted === EVERY ? everyVersion(a.version) : [wanted];
    const answers = (await Promise.all(versions.map((version) =>
      rpc().getAutomationStats({ workspaceId: sessionOf(request).workspaceId, automationId: a.id, version }, rpcOptions(request)).catch((err: unknown) => {
        // Summing every version: one the service no longer has counts nothing (a version asked for alone is its 404).
        if (wanted === EVERY && errorInfoOf(err)?.code === "automation_not_found") return null;
        throw err;
      })))).filter((res) => res !== null);
    const steps = new Map<string, StepCounts>();
    const types = new Map<string, string>();
    for (const res of answers) {
      for (const s of res.steps) {
        const c = steps.get(s.stepId) ?? { entered: 0, waiting: 0, completed: 0, exited: 0 };
        c.entered += n(s.entered); c.waiting += n(s.waiting); c.completed += n(s.completed); c.exited += n(s.exited);
        steps.set(s.stepId, c);
        types.set(s.stepId, s.type);
      }
    }
    const current = new Set(stepIdsOf(definitionOf(a).steps));
    const gone = [...steps].filter(([id]) => !current.has(id)).map(([id, counts]) => ({ id, type: types.get(id) ?? "", counts }));
    return { version: wanted === EVERY ? EVERY : answers[0]?.version || a.version, versions: versions.length, steps, gone };
  };

  /** `?version=`: "all" (the default), or one version from 1 to the current one; anything else is a 404. */
  const versionOf = (request: FastifyRequest, a: Automation): VersionChoice => {
    const v = str(request.query, "version");
    if (v === "" || v === EVERY) return EVERY;
    const version = /^[1-9]\d{0,9}$/.test(v) ? Number(v) : NaN;
    if (!(version <= a.version)) throw refusal({ code: "automation_not_found", status: 404, message: `${a.name} has no version ${v.slice(0, 20)} (its versions are 1 to ${a.version})` });
    return version;
  };

  scope.get<{ Params: { id: string } }>("/automations/:id/stats.json", async (request, reply) => {
    const a = await load(request, request.params.id);
    const stats = await statsOf(request, a, versionOf(request, a));
    return reply.send({
      status: statusName(a.status), statusText: statusWords(statusName(a.status)), version: stats.version,
      runs: { active: n(a.runs?.active), completed: n(a.runs?.completed), exited: n(a.runs?.exited) },
      steps: Object.fromEntries(stats.steps),
    });
  });

  scope.get<{ Params: { id: string } }>("/automations/:id", async (request, reply) => {
    const session = sessionOf(request);
    const a = await load(request, request.params.id);
    const opts = rpcOptions(request);
    const runsCursor = str(request.query, "runs");
    const version = versionOf(request, a);
    const [stats, names, runs] = await Promise.all([
      statsOf(request, a, version),
      namesOf(request),
      rpc().listRuns({ workspaceId: session.workspaceId, automationId: a.id, contactId: "", page: { limit: 20, cursor: runsCursor } }, opts),
    ]);
    const contacts = new Map<string, string>();
    await Promise.all([...new Set(runs.runs.map((r) => r.contactId))].map((id) =>
      deps.clients.contacts.getContact({ workspaceId: session.workspaceId, contactId: id }, opts)
        .then((r) => { if (r.contact) contacts.set(id, r.contact.email); }, () => undefined)));
    const body = render(automationPageView({
      automation: a, version, stats, names,
      runs: runsTable(runs.runs, contacts, "runs-h"),
      runsCursor: runs.page?.hasMore ? runs.page.nextCursor : undefined,
      csrf: session.canEdit ? csrfField(session) : undefined,
    }));
    return html(reply, consolePage({ title: a.name, session, active: "automations", flash: request.consoleFlash, body }));
  });

  // --- state changes ----------------------------------------------------------------------------

  const STATE_CHANGES = [
    ["activate", "activateAutomation", "is active: contacts enter as the trigger fires."],
    ["pause", "pauseAutomation", "is paused: nobody enters, runs hold where they are."],
    ["delete", "deleteAutomation", "is deleted; its runs in progress exited."],
  ] as const;
  for (const [path, method, done] of STATE_CHANGES) {
    scope.post<{ Params: { id: string } }>(`/automations/:id/${path}`, async (request, reply) => {
      const session = sessionOf(request);
      editable(request);
      const a = await load(request, request.params.id);
      const back = path === "delete" || str(request.body, "back") === "list" ? consoleUrl("/automations") : consoleUrl(`/automations/${a.id}`);
      try {
        await rpc()[method]({ workspaceId: session.workspaceId, automationId: a.id }, rpcOptions(request));
        setFlash(reply, { kind: "ok", message: `${a.name} ${done}` });
      } catch (err) {
        const e = bodyFromError(err);
        if (e.statusCode >= 500) throw err;
        setFlash(reply, { kind: "error", message: e.message });
      }
      return seeOther(reply, back);
    });
  }
}

const everyVersion = (current: number) => Array.from({ length: Math.min(current, MAX_VERSIONS_SUMMED) }, (_, i) => current - i);

/** Every step id of a definition, nested ones too (then, else). */
function stepIdsOf(steps: unknown[]): string[] {
  const out: string[] = [];
  for (const step of steps) {
    if (!step || typeof step !== "object") continue;
    const s = step as { id?: unknown; then?: unknown; else?: unknown };
    if (typeof s.id === "string") out.push(s.id);
    for (const branch of [s.then, s.else]) if (Array.isArray(branch)) out.push(...stepIdsOf(branch));
  }
  return out;
}
