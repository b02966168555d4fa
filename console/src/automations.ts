/**
 * Automations pages (DESIGN §9.6): the list with status, version and run counts; one
 * automation as a vertical flow of its steps with live counts per step and its recent runs;
 * the editor, a form per step (automation-form.ts), with a raw JSON editor beside it.
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
 * The automation unit alone validates a definition; its 400 invalid_automation names the
 * JSON path (`steps[1].then[0].template: …`), which the editor shows inside that step.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AutomationStatus, type Automation } from "@mailroom/proto/automation/v1/automation_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, statusWords, type Tone } from "./layout.js";
import { seeOther, sessionOf, setFlash } from "./session.js";
import { editable, html, str } from "./form-values.js";
import { builderFields } from "./filter-builder.js";
import { workspaceGroups } from "./segments.js";
import { groupLabel } from "./groups.js";
import { COUNT_KEYS, FLOW_STYLE, describeReentry, describeTrigger, flowHtml, type Names, type StepCounts } from "./automation-flow.js";
import {
  applyOp, automationFormHtml, definitionFromJson, definitionOfDraft, draftFromDefinition, draftFromForm, draftJson, emptyDraft,
  type Built, type FormDraft,
} from "./automation-form.js";
import { runsTable } from "./automation-runs.js";

/** aut_ then the unit's id; anything else is not sent to the service. */
const AUTOMATION_ID = /^aut_[0-9A-Za-z_-]{1,64}$/;
const STATUS_TONE: Record<number, Tone> = { [AutomationStatus.DRAFT]: "info", [AutomationStatus.ACTIVE]: "ok", [AutomationStatus.PAUSED]: "warn" };
const statusName = (s: AutomationStatus) => AutomationStatus[s] ?? "UNSPECIFIED";
const statusHtml = (a: Automation) => `<span data-status>${statusBadge(statusName(a.status), STATUS_TONE[a.status] ?? "info")}</span>`;
const n = (v: bigint | undefined) => Number(v ?? 0n);

/** The definition's JSON texts, read loosely (the unit wrote them; a surprise shows as JSON). */
function definitionOf(a: Automation): { trigger: unknown; steps: unknown[]; reentry: unknown } {
  const parse = (t: string, fallback: unknown) => {
    try {
      return t ? JSON.parse(t) : fallback;
    } catch {
      return fallback;
    }
  };
  const steps = parse(a.stepsJson, []);
  return { trigger: parse(a.triggerJson, {}), steps: Array.isArray(steps) ? steps : [], reentry: parse(a.reentryJson, "once") };
}

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
    const csrf = csrfField(session);
    const rows = res.automations.map((a) => {
      const base = consoleUrl(`/automations/${a.id}`);
      const toggle = a.status === AutomationStatus.ACTIVE
        ? `<form method="post" action="${base}/pause">${csrf}<input type="hidden" name="back" value="list"><button type="submit" class="secondary small" aria-label="Pause ${escapeHtml(a.name)}">Pause</button></form>`
        : `<form method="post" action="${base}/activate">${csrf}<input type="hidden" name="back" value="list"><button type="submit" class="small" aria-label="Activate ${escapeHtml(a.name)}">Activate</button></form>`;
      const remove = `<form method="post" action="${base}/delete" data-confirm="Delete the automation ${escapeHtml(a.name)}? Its runs in progress exit.">${csrf}<input type="hidden" name="back" value="list"><button type="submit" class="danger small" aria-label="Delete ${escapeHtml(a.name)}">Delete</button></form>`;
      return `<tr data-automation="${escapeHtml(a.id)}"><td data-label="Automation"><a href="${base}">${escapeHtml(a.name)}</a><br><span class="muted">${escapeHtml(describeTrigger(definitionOf(a).trigger, names))}</span></td>
<td data-label="Status">${statusHtml(a)}</td><td data-label="Version" class="num">${a.version}</td>
<td data-label="Active runs" class="num" data-runs="active">${n(a.runs?.active)}</td><td data-label="Completed" class="num" data-runs="completed">${n(a.runs?.completed)}</td>
<td data-label="Exited" class="num" data-runs="exited">${n(a.runs?.exited)}</td><td data-label="Updated">${formatTime(a.updatedAt && timestampDate(a.updatedAt))}</td>
${session.canEdit ? `<td data-label="Actions"><div class="row" style="gap:.25rem">${toggle}${remove}</div></td>` : ""}</tr>`;
    }).join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl("/automations", { cursor: res.page.nextCursor })}">More automations</a></p>` : "";
    const body = `<h1>Automations</h1>
<p class="muted">Welcome series, drips and re-engagement: a trigger lets contacts in, and each goes through the steps on its own. A draft or paused automation lets nobody in.</p>
<div class="actions">${session.canEdit ? `<a class="button" href="${consoleUrl("/automations/new")}">New automation</a>` : ""}</div>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Automations, newest first</caption><thead><tr><th>Automation</th><th>Status</th><th class="num">Version</th><th class="num">Active runs</th><th class="num">Completed</th><th class="num">Exited</th><th>Updated</th>${session.canEdit ? "<th>Actions</th>" : ""}</tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : `<p class="muted">No automations yet.</p>`}`;
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
      deps.clients.directory.listContactProperties({ workspaceId: session.workspaceId }, opts).then((r) => r.properties, () => []),
      groupsOf(request),
      deps.clients.directory.listTemplates({ workspaceId: session.workspaceId, page: { limit: 100 }, kind: "template" }, opts).then((r) => r.templates.map((t) => t.name), () => []),
    ]);
    const a = state.automation;
    const title = a ? `Edit ${a.name}` : "New automation";
    const form = automationFormHtml(state.draft, {
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
    const intro = a
      ? `<p class="muted">Version ${a.version} · ${escapeHtml(statusName(a.status))}. Saving makes version ${a.version + 1}; runs in progress finish on the version they started on.</p>`
      : `<p class="muted">A new automation is a draft: nobody enters until you activate it.</p>`;
    return consolePage({ title, session, active: "automations", body: `<h1>${escapeHtml(title)}</h1>${intro}${form}` });
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
    const texts = { name: built.name, triggerJson: JSON.stringify(built.trigger), stepsJson: JSON.stringify(built.steps), reentryJson: JSON.stringify(built.reentry) };
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
      deps.clients.directory.getContact({ workspaceId: session.workspaceId, contactId: id }, opts)
        .then((r) => { if (r.contact) contacts.set(id, r.contact.email); }, () => undefined)));
    const def = definitionOf(a);
    const base = consoleUrl(`/automations/${a.id}`);
    const csrf = csrfField(session);
    const actions = session.canEdit ? `<div class="actions"><a class="button secondary" href="${base}/edit">Edit</a>
${a.status === AutomationStatus.ACTIVE
    ? `<form method="post" action="${base}/pause">${csrf}<button type="submit" class="secondary">Pause</button></form>`
    : `<form method="post" action="${base}/activate">${csrf}<button type="submit">Activate</button></form>`}
<form method="post" action="${base}/delete" data-confirm="Delete the automation ${escapeHtml(a.name)}? Its runs in progress exit.">${csrf}<button type="submit" class="danger">Delete</button></form></div>` : "";
    const runCounts = COUNT_RUNS.map(([k, label]) => `<div class="card" style="margin:0"><div class="muted">${label}</div><div style="font-size:1.5rem;font-weight:700" data-runs="${k}">${n(a.runs?.[k])}</div></div>`).join("");
    const moreRuns = runs.page?.hasMore ? `<p><a href="${consoleUrl(`/automations/${a.id}`, { runs: runs.page.nextCursor })}#runs-h">Older runs</a></p>` : "";
    const body = `${FLOW_STYLE}<h1>${escapeHtml(a.name)} ${statusHtml(a)}</h1>
<p class="muted">id <code>${escapeHtml(a.id)}</code> · version ${a.version} · created ${formatTime(a.createdAt && timestampDate(a.createdAt))} · updated ${formatTime(a.updatedAt && timestampDate(a.updatedAt))}</p>
<p>${escapeHtml(describeTrigger(def.trigger, names))}. ${escapeHtml(describeReentry(def.reentry))}.</p>
${actions}
<section aria-labelledby="runs-count-h"><h2 id="runs-count-h">Runs (every version)</h2><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(9rem,1fr))">${runCounts}</div></section>
<section aria-labelledby="flow-h"><h2 id="flow-h">Flow</h2>
${versionPicker(base, a.version, version)}
<p class="muted" id="live" role="status">${version === EVERY
    ? `Counts of every version (${stats.versions}${stats.versions < a.version ? ` newest of ${a.version}` : ""}) per step, by step id: entered, waiting there now, completed, exited there; runs finish on the version they started on.`
    : `Counts of version <span data-version>${stats.version}</span> per step, by step id: entered, waiting there now, completed, exited there.`} They update every few seconds.</p>
${flowHtml(def.trigger, def.steps, stats.steps, names)}${goneStepsHtml(stats.gone, version)}</section>
<section aria-labelledby="runs-h"><h2 id="runs-h">Recent runs</h2>${runsTable(runs.runs, contacts, "runs-h")}${moreRuns}</section>
<p><a href="${consoleUrl("/automations")}">Back to automations</a></p>${liveScript(`${base}/stats.json${version === EVERY ? "" : `?version=${version}`}`)}`;
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

const COUNT_RUNS = [["active", "Active"], ["completed", "Completed"], ["exited", "Exited"]] as const;

/** `?version=all`: the counts of every version summed by step id. */
const EVERY = "all";
type VersionChoice = number | typeof EVERY;
/** Versions whose counts "every version" sums: the newest ones, one call each. */
const MAX_VERSIONS_SUMMED = 50;
const everyVersion = (current: number) => Array.from({ length: Math.min(current, MAX_VERSIONS_SUMMED) }, (_, i) => current - i);

interface FlowStats {
  version: VersionChoice;
  /** How many versions' counts were summed. */
  versions: number;
  steps: Map<string, StepCounts>;
  /** Steps with counts that the current flow no longer has (removed by a later version). */
  gone: { id: string; type: string; counts: StepCounts }[];
}

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

/** Which version's counts the flow shows: every version (default) or one; a GET form, no script needed. */
function versionPicker(base: string, current: number, chosen: VersionChoice): string {
  const versions = Array.from({ length: Math.min(current, MAX_VERSIONS_SUMMED) }, (_, i) => current - i);
  const options = [`<option value="${EVERY}"${chosen === EVERY ? " selected" : ""}>Every version</option>`,
    ...versions.map((v) => `<option value="${v}"${chosen === v ? " selected" : ""}>Version ${v}${v === current ? " (current)" : ""}</option>`)];
  if (typeof chosen === "number" && !versions.includes(chosen)) options.push(`<option value="${chosen}" selected>Version ${chosen}</option>`);
  return `<form method="get" action="${base}#flow-h" class="row" data-version-picker><div class="field"><label for="f-version">Counts of</label>
<select id="f-version" name="version">${options.join("")}</select></div><div class="field"><button type="submit" class="secondary">Show</button></div></form>`;
}

/** Counts at steps the current flow no longer has: runs of an older version can still wait there. */
function goneStepsHtml(gone: FlowStats["gone"], version: VersionChoice): string {
  const withRuns = gone.filter((g) => COUNT_KEYS.some((k) => g.counts[k] > 0));
  if (!withRuns.length) return "";
  const rows = withRuns.map((g) => `<tr data-gone-step="${escapeHtml(g.id)}"><td data-label="Step"><code>${escapeHtml(g.id)}</code> <span class="muted">${escapeHtml(g.type)}</span></td>${COUNT_KEYS.map((k) => `<td class="num" data-label="${k[0].toUpperCase()}${k.slice(1)}">${g.counts[k]}</td>`).join("")}</tr>`).join("");
  return `<h3 id="gone-h">Steps no longer in the flow</h3>
<p class="muted">Removed by a later version; runs of ${version === EVERY ? "earlier versions" : `version ${version}`} counted here${withRuns.some((g) => g.counts.waiting > 0) ? " — some still wait there and finish on their version" : ""}.</p>
<div class="table-wrap"><table class="data stack" aria-labelledby="gone-h"><thead><tr><th>Step</th>${COUNT_KEYS.map((k) => `<th class="num">${k[0].toUpperCase()}${k.slice(1)}</th>`).join("")}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** Polls the counts (no reload); stops polling while the tab is hidden. Without JS the page shows the counts as loaded. */
function liveScript(url: string): string {
  return `<script>(function(){var url=${JSON.stringify(url)};var keys=${JSON.stringify(COUNT_KEYS)};
function set(el,v){if(el&&el.textContent!==String(v))el.textContent=String(v)}
function tick(){if(document.hidden){setTimeout(tick,3000);return}
fetch(url,{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return setTimeout(tick,6000);
document.querySelectorAll("[data-stats]").forEach(function(box){var c=d.steps[box.getAttribute("data-stats")];keys.forEach(function(k){set(box.querySelector('[data-count="'+k+'"]'),c?c[k]:0)})});
Object.keys(d.runs).forEach(function(k){set(document.querySelector('[data-runs="'+k+'"]'),d.runs[k])});
set(document.querySelector("[data-version]"),d.version);var st=document.querySelector("[data-status] .badge");if(st)set(st,d.statusText||d.status);
setTimeout(tick,3000)}).catch(function(){setTimeout(tick,6000)})}
setTimeout(tick,3000)})();</script>`;
}
