/**
 * The broadcast form's audience picker (DESIGN §9.4), the view: a fieldset that works without
 * JS (the count needs it). Its values and the count's route are pages/audience-picker.ts.
 */
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import type { Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { consoleUrl } from "../layout.js";
import type { AudienceMode, AudienceValues } from "../pages/audience-picker.js";
import { html, trusted, type Html } from "./html.js";

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

export function audiencePickerView(v: AudienceValues, ctx: PickerContext): Html {
  const radio = (mode: AudienceMode, label: string) =>
    html`<div class="check"><input type="radio" id="aud-mode-${mode}" name="audience" value="${mode}"${v.mode === mode ? html` checked` : ""}><label for="aud-mode-${mode}" style="font-weight:400">${label}</label></div>`;
  const groupBoxes = (name: string, chosen: string[]) => ctx.groups.length
    ? html`<div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.25rem 1rem">${ctx.groups.map((g, i) =>
      html`<div class="check"><input type="checkbox" id="${name}-${i}" name="${name}" value="${g.id}"${chosen.includes(g.id) ? html` checked` : ""}><label for="${name}-${i}" style="font-weight:400">${g.displayName || g.publicId}</label></div>`)}</div>`
    : html`<p class="muted">No groups yet (<a href="${consoleUrl("/groups")}">create one</a>).</p>`;
  const segmentSelect = (id: string, name: string, chosen: string, label: string, none: string) =>
    html`<div class="field"><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">${none}</option>${ctx.segments.map((s) =>
      html`<option value="${s.id}"${s.id === chosen ? html` selected` : ""}>${s.name}</option>`)}</select></div>`;
  const topics = html`<div class="field"><label for="aud-topic">Topic (optional: only contacts who receive it; its unsubscribe link leaves the topic only)</label>
<select id="aud-topic" name="audienceTopic"><option value="">No topic</option>${ctx.topics.map((t) =>
    html`<option value="${t.id}"${t.id === v.topicId ? html` selected` : ""}>${t.name}</option>`)}</select></div>`;
  const excluding = v.excludeGroups.length || v.excludeSegmentId || v.excludeFilterJson;
  return html`<fieldset class="field" id="audience-picker" data-count-url="${consoleUrl("/broadcasts/audience-count.json")}"><legend>Audience</legend>
<p class="muted" style="margin:.25rem 0">Only subscribed contacts, minus the suppression list (and a topic's opt-outs), as of when sending starts.</p>
${radio("all", "Everyone subscribed")}${radio("groups", "Contacts in any of these groups")}
<div data-mode="groups" style="margin:0 0 .5rem 1.6rem">${groupBoxes("audienceGroups", v.groups)}</div>
${radio("segment", "A segment")}
<div data-mode="segment" style="margin:0 0 .5rem 1.6rem">${segmentSelect("aud-segment", "audienceSegment", v.segmentId, "Segment", "Choose a segment…")}</div>
${radio("filter", "A filter (JSON)")}
<div data-mode="filter" style="margin:0 0 .5rem 1.6rem"><label for="aud-filter">Filter (the segment filter language)</label><textarea id="aud-filter" name="audienceFilter" rows="3" spellcheck="false">${v.filterJson}</textarea></div>
<details${excluding ? html` open` : ""}><summary>Leave out…</summary>
<fieldset class="field"><legend>Contacts in these groups</legend>${groupBoxes("audienceExcludeGroups", v.excludeGroups)}</fieldset>
${segmentSelect("aud-exclude-segment", "audienceExcludeSegment", v.excludeSegmentId, "Contacts in this segment", "No segment")}
<div class="field"><label for="aud-exclude-filter">Contacts matching this filter (JSON, optional)</label><textarea id="aud-exclude-filter" name="audienceExcludeFilter" rows="2" spellcheck="false" style="min-height:4rem">${v.excludeFilterJson}</textarea></div></details>
${topics}
<p id="audience-count-wrap" hidden style="font-size:1.05rem;margin:.5rem 0 0">Contacts in this audience now: <strong id="audience-count" aria-live="polite">${ctx.count ?? "—"}</strong></p>
<p id="audience-error" role="alert" style="color:#991b1b;margin:0"></p>
<noscript><p class="muted">${ctx.count === undefined ? "" : `Audience when last saved: ${ctx.count} contacts. `}Save the draft to see the count of a changed audience.</p></noscript>
<script>${trusted(PICKER_JS)}</script></fieldset>`;
}
