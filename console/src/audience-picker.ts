/**
 * The broadcast form's audience picker (DESIGN §9.4): everyone, some groups, a segment or a
 * filter; optionally without some groups, a segment or a filter; optionally only those who
 * receive a topic. It shows how many contacts that is (CountAudience: subscribed, not
 * suppressed, not opted out of the topic) before scheduling, and refreshes as it changes.
 *
 *   audienceFromForm(body)         the picker's fields → AudienceValues
 *   audienceValuesOf(audience?)    a broadcast's audience → AudienceValues (to show it)
 *   audienceRpc(values)            AudienceValues → the Audience message (broadcast and directory alike)
 *   audiencePickerHtml(values, ctx)  the fieldset (works without JS; the count needs it)
 *   registerAudiencePickerRoutes   GET /broadcasts/audience-count.json?<picker fields> → { count } | { error }
 */
import type { FastifyInstance } from "fastify";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { Segment } from "@mailroom/proto/directory/v1/audiences_pb.js";
import type { Group } from "@mailroom/proto/directory/v1/groups_pb.js";
import type { Topic } from "@mailroom/proto/directory/v1/topics_pb.js";
import type { ConsoleDeps } from "./deps.js";
import { consoleUrl, escapeHtml } from "./layout.js";
import { sessionOf } from "./session.js";
import { all, str } from "./form-values.js";
import { groupLabel } from "./groups.js";

export type AudienceMode = "all" | "groups" | "segment" | "filter";

export interface AudienceValues {
  mode: AudienceMode;
  groups: string[];
  segmentId: string;
  filterJson: string;
  excludeGroups: string[];
  excludeSegmentId: string;
  excludeFilterJson: string;
  topicId: string;
}

export const EVERYONE: AudienceValues = { mode: "all", groups: [], segmentId: "", filterJson: "", excludeGroups: [], excludeSegmentId: "", excludeFilterJson: "", topicId: "" };

const MODES: AudienceMode[] = ["all", "groups", "segment", "filter"];

/** The picker's form fields (names prefixed `audience`). */
export function audienceFromForm(body: unknown): AudienceValues {
  const mode = str(body, "audience") as AudienceMode;
  return {
    mode: MODES.includes(mode) ? mode : "all",
    groups: all(body, "audienceGroups").filter(Boolean),
    segmentId: str(body, "audienceSegment"),
    filterJson: str(body, "audienceFilter").trim(),
    excludeGroups: all(body, "audienceExcludeGroups").filter(Boolean),
    excludeSegmentId: str(body, "audienceExcludeSegment"),
    excludeFilterJson: str(body, "audienceExcludeFilter").trim(),
    topicId: str(body, "audienceTopic"),
  };
}

interface AudienceLike {
  all: boolean;
  groups: string[];
  segmentId: string;
  filterJson: string;
  exclude?: { groups: string[]; segmentId: string; filterJson: string };
  topicId: string;
}

export function audienceValuesOf(a: AudienceLike | undefined): AudienceValues {
  if (!a) return EVERYONE;
  const mode: AudienceMode = a.groups.length ? "groups" : a.segmentId ? "segment" : a.filterJson ? "filter" : "all";
  return {
    mode, groups: [...a.groups], segmentId: a.segmentId, filterJson: a.filterJson,
    excludeGroups: [...(a.exclude?.groups ?? [])], excludeSegmentId: a.exclude?.segmentId ?? "", excludeFilterJson: a.exclude?.filterJson ?? "",
    topicId: a.topicId,
  };
}

/**
 * The Audience message: only the chosen mode's field (a group list left checked under
 * another mode is not sent), the exclusions and the topic. Groups with no group chosen
 * are sent as chosen (none), so the service says what is missing.
 */
export function audienceRpc(v: AudienceValues) {
  const exclude = v.excludeGroups.length || v.excludeSegmentId || v.excludeFilterJson
    ? { groups: v.excludeGroups, segmentId: v.excludeSegmentId, filterJson: v.excludeFilterJson }
    : undefined;
  return {
    all: v.mode === "all",
    groups: v.mode === "groups" ? v.groups : [],
    segmentId: v.mode === "segment" ? v.segmentId : "",
    filterJson: v.mode === "filter" ? v.filterJson || "{}" : "",
    ...(exclude ? { exclude } : {}),
    topicId: v.topicId,
  };
}

export interface PickerContext {
  groups: Group[];
  segments: Segment[];
  topics: Topic[];
  /** The count the page was rendered with (the broadcast's audienceCount), if any. */
  count?: number;
}

const PICKER_JS = String.raw`(function(){
var box=document.getElementById("audience-picker");if(!box)return;
var out=document.getElementById("audience-count"),err=document.getElementById("audience-error"),url=box.getAttribute("data-count-url"),timer=null,seq=0;
function params(){var q=new URLSearchParams();box.querySelectorAll("input,select,textarea").forEach(function(e){if(!e.name||e.disabled)return;if((e.type==="checkbox"||e.type==="radio")&&!e.checked)return;q.append(e.name,e.value)});return q}
function sync(){var m=(box.querySelector("input[name=audience]:checked")||{}).value;box.querySelectorAll("[data-mode]").forEach(function(p){p.hidden=p.getAttribute("data-mode")!==m})}
function count(){var my=++seq;out.setAttribute("aria-busy","true");
fetch(url+"?"+params().toString(),{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.json().then(function(d){return {ok:r.ok,d:d}})})
.then(function(x){if(my!==seq)return;out.removeAttribute("aria-busy");if(x.ok){out.textContent=String(x.d.count);err.textContent=""}else{out.textContent="—";err.textContent=(x.d.error&&x.d.error.message)||"The count failed."}})
.catch(function(){if(my!==seq)return;out.removeAttribute("aria-busy");out.textContent="—";err.textContent="The count could not be fetched."})}
function changed(){sync();clearTimeout(timer);timer=setTimeout(count,300)}
box.addEventListener("change",changed);box.addEventListener("input",function(e){if(e.target.tagName==="TEXTAREA")changed()});
document.getElementById("audience-count-wrap").hidden=false;sync();count();
})();`;

export function audiencePickerHtml(v: AudienceValues, ctx: PickerContext): string {
  const radio = (mode: AudienceMode, label: string) =>
    `<div class="check"><input type="radio" id="aud-mode-${mode}" name="audience" value="${mode}"${v.mode === mode ? " checked" : ""}><label for="aud-mode-${mode}" style="font-weight:400">${label}</label></div>`;
  const groupBoxes = (name: string, chosen: string[]) => ctx.groups.length
    ? `<div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.25rem 1rem">${ctx.groups.map((g, i) =>
      `<div class="check"><input type="checkbox" id="${name}-${i}" name="${name}" value="${escapeHtml(g.id)}"${chosen.includes(g.id) ? " checked" : ""}><label for="${name}-${i}" style="font-weight:400">${escapeHtml(groupLabel(g))}</label></div>`).join("")}</div>`
    : `<p class="muted">No groups yet (<a href="${consoleUrl("/groups")}">create one</a>).</p>`;
  const segmentSelect = (id: string, name: string, chosen: string, label: string, none: string) =>
    `<div class="field"><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">${none}</option>${ctx.segments.map((s) =>
      `<option value="${escapeHtml(s.id)}"${s.id === chosen ? " selected" : ""}>${escapeHtml(s.name)}</option>`).join("")}</select></div>`;
  const topics = `<div class="field"><label for="aud-topic">Topic (optional: only contacts who receive it; its unsubscribe link leaves the topic only)</label>
<select id="aud-topic" name="audienceTopic"><option value="">No topic</option>${ctx.topics.map((t) =>
    `<option value="${escapeHtml(t.id)}"${t.id === v.topicId ? " selected" : ""}>${escapeHtml(t.name)}</option>`).join("")}</select></div>`;
  const excluding = v.excludeGroups.length || v.excludeSegmentId || v.excludeFilterJson;
  return `<fieldset class="field" id="audience-picker" data-count-url="${escapeHtml(consoleUrl("/broadcasts/audience-count.json"))}"><legend>Audience</legend>
<p class="muted" style="margin:.25rem 0">Only subscribed contacts, minus the suppression list (and a topic's opt-outs), as of when sending starts.</p>
${radio("all", "Everyone subscribed")}${radio("groups", "Contacts in any of these groups")}
<div data-mode="groups" style="margin:0 0 .5rem 1.6rem">${groupBoxes("audienceGroups", v.groups)}</div>
${radio("segment", "A segment")}
<div data-mode="segment" style="margin:0 0 .5rem 1.6rem">${segmentSelect("aud-segment", "audienceSegment", v.segmentId, "Segment", "Choose a segment…")}</div>
${radio("filter", "A filter (JSON)")}
<div data-mode="filter" style="margin:0 0 .5rem 1.6rem"><label for="aud-filter">Filter (the segment filter language)</label><textarea id="aud-filter" name="audienceFilter" rows="3" spellcheck="false">${escapeHtml(v.filterJson)}</textarea></div>
<details${excluding ? " open" : ""}><summary>Leave out…</summary>
<fieldset class="field"><legend>Contacts in these groups</legend>${groupBoxes("audienceExcludeGroups", v.excludeGroups)}</fieldset>
${segmentSelect("aud-exclude-segment", "audienceExcludeSegment", v.excludeSegmentId, "Contacts in this segment", "No segment")}
<div class="field"><label for="aud-exclude-filter">Contacts matching this filter (JSON, optional)</label><textarea id="aud-exclude-filter" name="audienceExcludeFilter" rows="2" spellcheck="false" style="min-height:4rem">${escapeHtml(v.excludeFilterJson)}</textarea></div></details>
${topics}
<p id="audience-count-wrap" hidden style="font-size:1.05rem;margin:.5rem 0 0">Contacts in this audience now: <strong id="audience-count" aria-live="polite">${ctx.count ?? "—"}</strong></p>
<p id="audience-error" role="alert" style="color:#991b1b;margin:0"></p>
<noscript><p class="muted">${ctx.count === undefined ? "" : `Audience when last saved: ${ctx.count} contacts. `}Save the draft to see the count of a changed audience.</p></noscript>
<script>${PICKER_JS}</script></fieldset>`;
}

export function registerAudiencePickerRoutes(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/broadcasts/audience-count.json", async (request, reply) => {
    const session = sessionOf(request);
    const audience = audienceRpc(audienceFromForm(request.query));
    try {
      const res = await deps.clients.audiences.countAudience({ workspaceId: session.workspaceId, audience }, rpcOptions(request));
      return reply.send({ count: Number(res.count) });
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return reply.code(e.statusCode).send({ error: { code: e.code, message: e.message } });
    }
  });
}
