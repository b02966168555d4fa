/**
 * Automations (/console/automations): the views of the list, the editor's page and one
 * automation (its flow with live counts and its recent runs). The handlers are pages/automations.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AutomationStatus, type Automation } from "@mailroom/proto/automation/v1/automation_pb.js";
import { consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { COUNT_KEYS, FLOW_STYLE, describeReentry, describeTrigger, flowView, type Names, type StepCounts } from "./automation-flow.js";
import { html, trusted, type Html } from "./html.js";

const STATUS_TONE: Record<number, Tone> = { [AutomationStatus.DRAFT]: "info", [AutomationStatus.ACTIVE]: "ok", [AutomationStatus.PAUSED]: "warn" };
export const statusName = (s: AutomationStatus) => AutomationStatus[s] ?? "UNSPECIFIED";
const statusView = (a: Automation) => html`<span data-status>${trusted(statusBadge(statusName(a.status), STATUS_TONE[a.status] ?? "info"))}</span>`;
const n = (v: bigint | undefined) => Number(v ?? 0n);
const time = (t: Parameters<typeof timestampDate>[0] | undefined) => trusted(formatTime(t && timestampDate(t)));

/** The definition's JSON texts, read loosely (the unit wrote them; a surprise shows as JSON). */
export function definitionOf(a: Automation): { trigger: unknown; steps: unknown[]; reentry: unknown } {
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

/** The list; `csrf` (the hidden input's markup) is given to an editing session, whose rows get activate / pause / delete. */
export function automationListView(automations: Automation[], names: Names, csrf: string | undefined, nextCursor?: string): Html {
  const csrfInput = trusted(csrf ?? "");
  const rows = automations.map((a) => {
    const base = consoleUrl(`/automations/${a.id}`);
    const toggle = a.status === AutomationStatus.ACTIVE
      ? html`<form method="post" action="${base}/pause">${csrfInput}<input type="hidden" name="back" value="list"><button type="submit" class="secondary small" aria-label="Pause ${a.name}">Pause</button></form>`
      : html`<form method="post" action="${base}/activate">${csrfInput}<input type="hidden" name="back" value="list"><button type="submit" class="small" aria-label="Activate ${a.name}">Activate</button></form>`;
    const remove = html`<form method="post" action="${base}/delete" data-confirm="Delete the automation ${a.name}? Its runs in progress exit.">${csrfInput}<input type="hidden" name="back" value="list"><button type="submit" class="danger small" aria-label="Delete ${a.name}">Delete</button></form>`;
    return html`<tr data-automation="${a.id}"><td data-label="Automation"><a href="${base}">${a.name}</a><br><span class="muted">${describeTrigger(definitionOf(a).trigger, names)}</span></td>
<td data-label="Status">${statusView(a)}</td><td data-label="Version" class="num">${a.version}</td>
<td data-label="Active runs" class="num" data-runs="active">${n(a.runs?.active)}</td><td data-label="Completed" class="num" data-runs="completed">${n(a.runs?.completed)}</td>
<td data-label="Exited" class="num" data-runs="exited">${n(a.runs?.exited)}</td><td data-label="Updated">${time(a.updatedAt)}</td>
${csrf !== undefined ? html`<td data-label="Actions"><div class="row" style="gap:.25rem">${toggle}${remove}</div></td>` : ""}</tr>`;
  });
  const more = nextCursor !== undefined ? html`<p><a href="${consoleUrl("/automations", { cursor: nextCursor })}">More automations</a></p>` : "";
  return html`<h1>Automations</h1>
<p class="muted">Welcome series, drips and re-engagement: a trigger lets contacts in, and each goes through the steps on its own. A draft or paused automation lets nobody in.</p>
<div class="actions">${csrf !== undefined ? html`<a class="button" href="${consoleUrl("/automations/new")}">New automation</a>` : ""}</div>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Automations, newest first</caption><thead><tr><th>Automation</th><th>Status</th><th class="num">Version</th><th class="num">Active runs</th><th class="num">Completed</th><th class="num">Exited</th><th>Updated</th>${csrf !== undefined ? html`<th>Actions</th>` : ""}</tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No automations yet.</p>`}`;
}

/** The editor's page around its form (views/automation-form.ts). */
export function editorPageView(title: string, automation: Automation | undefined, form: Html): Html {
  const a = automation;
  const intro = a
    ? html`<p class="muted">Version ${a.version} · ${statusName(a.status)}. Saving makes version ${a.version + 1}; runs in progress finish on the version they started on.</p>`
    : html`<p class="muted">A new automation is a draft: nobody enters until you activate it.</p>`;
  return html`<h1>${title}</h1>${intro}${form}`;
}

/** `?version=all`: the counts of every version summed by step id. */
export const EVERY = "all";
export type VersionChoice = number | typeof EVERY;
/** Versions whose counts "every version" sums: the newest ones, one call each. */
export const MAX_VERSIONS_SUMMED = 50;

export interface FlowStats {
  version: VersionChoice;
  /** How many versions' counts were summed. */
  versions: number;
  steps: Map<string, StepCounts>;
  /** Steps with counts that the current flow no longer has (removed by a later version). */
  gone: { id: string; type: string; counts: StepCounts }[];
}

const COUNT_RUNS = [["active", "Active"], ["completed", "Completed"], ["exited", "Exited"]] as const;

export interface AutomationPage {
  automation: Automation;
  version: VersionChoice;
  stats: FlowStats;
  names: Names;
  /** The recent runs' table (views/automation-runs.ts) and the next page's cursor. */
  runs: Html;
  runsCursor?: string;
  /** For an editing session: the hidden CSRF input of its forms. */
  csrf?: string;
}

/** One automation: its words, actions, run counts, the flow with counts per step, recent runs. */
export function automationPageView(p: AutomationPage): Html {
  const { automation: a, version, stats, names } = p;
  const def = definitionOf(a);
  const base = consoleUrl(`/automations/${a.id}`);
  const csrf = trusted(p.csrf ?? "");
  const actions = p.csrf !== undefined ? html`<div class="actions"><a class="button secondary" href="${base}/edit">Edit</a>
${a.status === AutomationStatus.ACTIVE
    ? html`<form method="post" action="${base}/pause">${csrf}<button type="submit" class="secondary">Pause</button></form>`
    : html`<form method="post" action="${base}/activate">${csrf}<button type="submit">Activate</button></form>`}
<form method="post" action="${base}/delete" data-confirm="Delete the automation ${a.name}? Its runs in progress exit.">${csrf}<button type="submit" class="danger">Delete</button></form></div>` : "";
  const runCounts = COUNT_RUNS.map(([k, label]) => html`<div class="card" style="margin:0"><div class="muted">${label}</div><div style="font-size:1.5rem;font-weight:700" data-runs="${k}">${n(a.runs?.[k])}</div></div>`);
  const moreRuns = p.runsCursor !== undefined ? html`<p><a href="${consoleUrl(`/automations/${a.id}`, { runs: p.runsCursor })}#runs-h">Older runs</a></p>` : "";
  return html`${FLOW_STYLE}<h1>${a.name} ${statusView(a)}</h1>
<p class="muted">id <code>${a.id}</code> · version ${a.version} · created ${time(a.createdAt)} · updated ${time(a.updatedAt)}</p>
<p>${describeTrigger(def.trigger, names)}. ${describeReentry(def.reentry)}.</p>
${actions}
<section aria-labelledby="runs-count-h"><h2 id="runs-count-h">Runs (every version)</h2><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(9rem,1fr))">${runCounts}</div></section>
<section aria-labelledby="flow-h"><h2 id="flow-h">Flow</h2>
${versionPicker(base, a.version, version)}
<p class="muted" id="live" role="status">${version === EVERY
    ? `Counts of every version (${stats.versions}${stats.versions < a.version ? ` newest of ${a.version}` : ""}) per step, by step id: entered, waiting there now, completed, exited there; runs finish on the version they started on.`
    : html`Counts of version <span data-version>${stats.version}</span> per step, by step id: entered, waiting there now, completed, exited there.`} They update every few seconds.</p>
${flowView(def.trigger, def.steps, stats.steps, names)}${goneStepsView(stats.gone, version)}</section>
<section aria-labelledby="runs-h"><h2 id="runs-h">Recent runs</h2>${p.runs}${moreRuns}</section>
<p><a href="${consoleUrl("/automations")}">Back to automations</a></p>${liveScript(`${base}/stats.json${version === EVERY ? "" : `?version=${version}`}`)}`;
}

/** Which version's counts the flow shows: every version (default) or one; a GET form, no script needed. */
function versionPicker(base: string, current: number, chosen: VersionChoice): Html {
  const versions = Array.from({ length: Math.min(current, MAX_VERSIONS_SUMMED) }, (_, i) => current - i);
  const options = [html`<option value="${EVERY}"${chosen === EVERY ? html` selected` : ""}>Every version</option>`,
    ...versions.map((v) => html`<option value="${v}"${chosen === v ? html` selected` : ""}>Version ${v}${v === current ? " (current)" : ""}</option>`)];
  if (typeof chosen === "number" && !versions.includes(chosen)) options.push(html`<option value="${chosen}" selected>Version ${chosen}</option>`);
  return html`<form method="get" action="${base}#flow-h" class="row" data-version-picker><div class="field"><label for="f-version">Counts of</label>
<select id="f-version" name="version">${options}</select></div><div class="field"><button type="submit" class="secondary">Show</button></div></form>`;
}

const capitalised = (k: string) => `${k[0].toUpperCase()}${k.slice(1)}`;

/** Counts at steps the current flow no longer has: runs of an older version can still wait there. */
function goneStepsView(gone: FlowStats["gone"], version: VersionChoice): Html | "" {
  const withRuns = gone.filter((g) => COUNT_KEYS.some((k) => g.counts[k] > 0));
  if (!withRuns.length) return "";
  const rows = withRuns.map((g) => html`<tr data-gone-step="${g.id}"><td data-label="Step"><code>${g.id}</code> <span class="muted">${g.type}</span></td>${COUNT_KEYS.map((k) => html`<td class="num" data-label="${capitalised(k)}">${g.counts[k]}</td>`)}</tr>`);
  return html`<h3 id="gone-h">Steps no longer in the flow</h3>
<p class="muted">Removed by a later version; runs of ${version === EVERY ? "earlier versions" : `version ${version}`} counted here${withRuns.some((g) => g.counts.waiting > 0) ? " — some still wait there and finish on their version" : ""}.</p>
<div class="table-wrap"><table class="data stack" aria-labelledby="gone-h"><thead><tr><th>Step</th>${COUNT_KEYS.map((k) => html`<th class="num">${capitalised(k)}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** Polls the counts (no reload); stops polling while the tab is hidden. Without JS the page shows the counts as loaded. */
function liveScript(url: string): Html {
  // JSON.stringify of a console URL and fixed keys: nothing in it can close the script.
  return html`<script>(function(){var url=${trusted(JSON.stringify(url))};var keys=${trusted(JSON.stringify(COUNT_KEYS))};
function set(el,v){if(el&&el.textContent!==String(v))el.textContent=String(v)}
function tick(){if(document.hidden){setTimeout(tick,3000);return}
fetch(url,{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return setTimeout(tick,6000);
document.querySelectorAll("[data-stats]").forEach(function(box){var c=d.steps[box.getAttribute("data-stats")];keys.forEach(function(k){set(box.querySelector('[data-count="'+k+'"]'),c?c[k]:0)})});
Object.keys(d.runs).forEach(function(k){set(document.querySelector('[data-runs="'+k+'"]'),d.runs[k])});
set(document.querySelector("[data-version]"),d.version);var st=document.querySelector("[data-status] .badge");if(st)set(st,d.statusText||d.status);
setTimeout(tick,3000)}).catch(function(){setTimeout(tick,6000)})}
setTimeout(tick,3000)})();</script>`;
}
