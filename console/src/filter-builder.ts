/**
 * The segment filter builder: rows of field / operator / value joined by AND or OR, turned
 * into the filter language's JSON (DESIGN §9.4, @mailroom/filter) in the browser, with the
 * live count asked of the console as it changes. The raw JSON (a textarea, what the form
 * posts) stays the source of truth and the fallback without JS.
 *
 *   builderFields(properties, groups)  the field list the page embeds (built-ins, the
 *                                      workspace's custom properties, groups, engagement)
 *   filterBuilderHtml({ fields, filterJson, countUrl, textareaName }) the builder + JSON editor
 *   FILTER_BUILDER_JS                  the pure functions (no DOM), also run by the unit test:
 *       mrOpsFor(kind)                       the operators a field kind offers
 *       mrBuildFilter(join, rows, fields)    → { filter } | { error, row }
 *       mrRowsFromFilter(filter, fields)     → { join, rows } | null (not expressible as rows)
 *
 * The browser code is a plain string (no build step), so the test evaluates exactly what
 * the page runs.
 */
import { OPERATORS_BY_KIND, CONTACT_SOURCES, CONTACT_STATUSES, ENGAGEMENT_EVENTS, type FieldKind } from "@mailroom/filter/filter.js";
import { PropertyType, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { html, render, trusted } from "./views/html.js";

export type BuilderKind = FieldKind | "engagement";

export interface BuilderField {
  /** The filter's field name ("email", "properties.plan", "groups") or "engagement.<event>". */
  key: string;
  label: string;
  kind: BuilderKind;
  /** Choices for enums, selects and groups (`alt`: a group's publicId, read back as its id). */
  values?: Array<{ value: string; label: string; alt?: string }>;
  /** The filter operators the language allows for this kind (the builder offers a subset). */
  allowed: readonly string[];
}

const PROPERTY_KINDS: Partial<Record<PropertyType, FieldKind>> = {
  [PropertyType.STRING]: "text",
  [PropertyType.NUMBER]: "number",
  [PropertyType.BOOLEAN]: "boolean",
  [PropertyType.DATE]: "date_iso",
  [PropertyType.SELECT]: "select",
  [PropertyType.MULTI_SELECT]: "multi_select",
};

const choices = (values: readonly string[]) => values.map((v) => ({ value: v, label: v }));

/** Every field the builder offers for this workspace. */
export function builderFields(properties: ContactProperty[], groups: Group[]): BuilderField[] {
  const f = (key: string, label: string, kind: BuilderKind, values?: BuilderField["values"]): BuilderField =>
    ({ key, label, kind, ...(values ? { values } : {}), allowed: kind === "engagement" ? [] : OPERATORS_BY_KIND[kind] });
  const out: BuilderField[] = [
    f("email", "Email", "email"),
    f("firstName", "First name", "text"),
    f("lastName", "Last name", "text"),
    f("status", "Status", "enum", choices(CONTACT_STATUSES)),
    f("source", "Source", "enum", choices(CONTACT_SOURCES)),
    f("createdAt", "Created", "date"),
    f("updatedAt", "Updated", "date"),
  ];
  for (const p of properties) {
    if (p.builtIn) continue;
    const kind = PROPERTY_KINDS[p.type];
    if (!kind) continue;
    const values = kind === "select" || kind === "multi_select" ? p.options.map((o) => ({ value: o.value, label: o.displayName || o.value })) : undefined;
    out.push(f(`properties.${p.slug}`, `${p.displayName || p.slug} (property)`, kind, values && values.length ? values : undefined));
  }
  out.push(f("groups", "Group", "groups", groups.map((g) => ({ value: g.id, label: g.displayName ? `${g.displayName} (${g.publicId})` : g.publicId, alt: g.publicId }))));
  for (const e of ENGAGEMENT_EVENTS) out.push(f(`engagement.${e}`, `Engagement: ${e}`, "engagement"));
  return out;
}

/**
 * The pure half of the builder, as the browser runs it. Row: { field, op, value } (value text).
 * Operators (UI ids): eq ne gt gte lt lte contains startsWith endsWith in nin exists notExists
 * withinDays olderDays (dates: { $ago }) and, for engagement, ever within never notWithin atLeast.
 */
export const FILTER_BUILDER_JS = String.raw`
var MR_OPS={
 eq:{label:"is",input:"value"},ne:{label:"is not",input:"value"},
 gt:{label:"greater than",input:"value",op:"$gt"},gte:{label:"at least",input:"value",op:"$gte"},
 lt:{label:"less than",input:"value",op:"$lt"},lte:{label:"at most",input:"value",op:"$lte"},
 contains:{label:"contains",input:"text",op:"$contains"},startsWith:{label:"starts with",input:"text",op:"$startsWith"},endsWith:{label:"ends with",input:"text",op:"$endsWith"},
 "in":{label:"is one of (comma separated)",input:"list",op:"$in"},nin:{label:"is none of (comma separated)",input:"list",op:"$nin"},
 exists:{label:"is set",input:"none"},notExists:{label:"is not set",input:"none"},
 withinDays:{label:"in the last (days)",input:"days"},olderDays:{label:"more than (days) ago",input:"days"},
 after:{label:"after",input:"date",op:"$gt"},before:{label:"before",input:"date",op:"$lt"},
 ever:{label:"at least once",input:"none"},within:{label:"in the last (days)",input:"days"},
 never:{label:"never",input:"none"},notWithin:{label:"not in the last (days)",input:"days"},atLeast:{label:"at least (times)",input:"count"}
};
var MR_KIND_OPS={
 text:["eq","ne","contains","startsWith","endsWith","in","nin","exists","notExists"],
 email:["eq","ne","contains","startsWith","endsWith","in","nin","exists","notExists"],
 select:["eq","ne","in","nin","exists","notExists"],
 "enum":["eq","ne","in","nin"],
 date:["withinDays","olderDays","after","before","exists","notExists"],
 date_iso:["withinDays","olderDays","after","before","exists","notExists"],
 number:["eq","ne","gt","gte","lt","lte","in","nin","exists","notExists"],
 "boolean":["eq","exists","notExists"],
 multi_select:["contains","exists","notExists"],
 groups:["eq","ne"],
 engagement:["ever","within","never","notWithin","atLeast"]
};
var MR_GROUP_LABELS={eq:"is in",ne:"is not in"};
function mrOpsFor(kind){return (MR_KIND_OPS[kind]||[]).map(function(op){return {op:op,label:(kind==="groups"&&MR_GROUP_LABELS[op])||MR_OPS[op].label,input:MR_OPS[op].input}})}
function mrFieldOf(fields,key){for(var i=0;i<fields.length;i++)if(fields[i].key===key)return fields[i];return null}
function mrScalar(field,text){
 var t=String(text==null?"":text).trim();
 if(field.kind==="number"){if(t===""||!isFinite(Number(t)))throw new Error("enter a number");return Number(t)}
 if(field.kind==="boolean"){if(t!=="true"&&t!=="false")throw new Error("choose true or false");return t==="true"}
 if(t==="")throw new Error("enter a value");
 return t;
}
function mrDays(text){var t=String(text==null?"":text).trim();if(!/^[0-9]{1,6}$/.test(t)||Number(t)<1)throw new Error("enter a whole number of days (1 or more)");return "P"+Number(t)+"D"}
function mrRowJson(row,field){
 var k=field.key,op=row.op,o={};
 if(field.kind==="engagement"){
  var ev={event:k.slice("engagement.".length)};
  if(op==="ever")return {$engagement:ev};
  if(op==="never")return {$not:{$engagement:ev}};
  if(op==="within"){ev.since={$ago:mrDays(row.value)};return {$engagement:ev}}
  if(op==="notWithin"){ev.since={$ago:mrDays(row.value)};return {$not:{$engagement:ev}}}
  if(op==="atLeast"){var n=String(row.value==null?"":row.value).trim();if(!/^[0-9]{1,6}$/.test(n)||Number(n)<1)throw new Error("enter a whole number of times (1 or more)");ev.min=Number(n);return {$engagement:ev}}
  throw new Error("choose an operator");
 }
 if((MR_KIND_OPS[field.kind]||[]).indexOf(op)<0)throw new Error("choose an operator");
 var d=MR_OPS[op];
 if(op==="eq"){o[k]=mrScalar(field,row.value);return o}
 if(op==="ne"){o[k]={$ne:mrScalar(field,row.value)};return o}
 if(op==="exists"||op==="notExists"){o[k]={$exists:op==="exists"};return o}
 if(op==="withinDays"){o[k]={$gte:{$ago:mrDays(row.value)}};return o}
 if(op==="olderDays"){o[k]={$lt:{$ago:mrDays(row.value)}};return o}
 if(op==="after"||op==="before"){var dt=String(row.value==null?"":row.value).trim();if(!/^\d{4}-\d{2}-\d{2}$/.test(dt))throw new Error("enter a date");o[k]={};o[k][d.op]=dt;return o}
 if(op==="in"||op==="nin"){var parts=String(row.value==null?"":row.value).split(",").map(function(s){return s.trim()}).filter(function(s){return s!==""});
  if(!parts.length)throw new Error("enter one or more values, separated by commas");o[k]={};o[k][d.op]=parts.map(function(p){return mrScalar(field,p)});return o}
 o[k]={};o[k][d.op]=mrScalar(field,row.value);return o;
}
function mrBuildFilter(join,rows,fields){
 var out=[];
 for(var i=0;i<rows.length;i++){
  var field=mrFieldOf(fields,rows[i].field);
  if(!field)return {error:"choose a field",row:i};
  try{out.push(mrRowJson(rows[i],field))}catch(e){return {error:e.message,row:i}}
 }
 if(!out.length)return {filter:{}};
 if(out.length===1)return {filter:out[0]};
 var f={};f[join==="or"?"$or":"$and"]=out;return {filter:f};
}
function mrIsObj(v){return v!==null&&typeof v==="object"&&!Array.isArray(v)}
function mrAgoDays(v){if(!mrIsObj(v)||Object.keys(v).length!==1||typeof v.$ago!=="string")return null;var m=/^P([0-9]{1,6})D$/.exec(v.$ago);return m?m[1]:null}
function mrText(field,v){
 if(field.kind==="number")return typeof v==="number"?String(v):null;
 if(field.kind==="boolean")return typeof v==="boolean"?String(v):null;
 if(field.kind==="groups"&&typeof v==="string"&&field.values){for(var i=0;i<field.values.length;i++)if(field.values[i].alt===v)return field.values[i].value}
 return typeof v==="string"?v:null;
}
function mrRowOf(item,fields){
 var keys=Object.keys(item);if(keys.length!==1)return null;
 var k=keys[0],v=item[k],ev,days;
 if(k==="$engagement"||k==="$not"){
  var neg=k==="$not";
  if(neg){if(!mrIsObj(v)||Object.keys(v).length!==1||!mrIsObj(v.$engagement))return null;ev=v.$engagement}else ev=v;
  if(!mrIsObj(ev))return null;
  var ek=Object.keys(ev);for(var i=0;i<ek.length;i++)if(["event","since","min"].indexOf(ek[i])<0)return null;
  var ef=mrFieldOf(fields,"engagement."+ev.event);if(!ef)return null;
  days=ev.since===undefined?null:mrAgoDays(ev.since);if(ev.since!==undefined&&days===null)return null;
  var min=ev.min===undefined?1:ev.min;
  if(neg){if(min!==1)return null;return days?{field:ef.key,op:"notWithin",value:days}:{field:ef.key,op:"never",value:""}}
  if(min!==1){if(days||typeof min!=="number")return null;return {field:ef.key,op:"atLeast",value:String(min)}}
  return days?{field:ef.key,op:"within",value:days}:{field:ef.key,op:"ever",value:""};
 }
 var field=mrFieldOf(fields,k);if(!field||field.kind==="engagement")return null;
 var ops=MR_KIND_OPS[field.kind]||[];
 var row=null;
 if(!mrIsObj(v)){var t=mrText(field,v);row=t===null?null:{field:k,op:"eq",value:t}}
 else{
  var ok=Object.keys(v);if(ok.length!==1)return null;
  var op=ok[0],x=v[op];
  if(op==="$exists"){if(typeof x!=="boolean")return null;row={field:k,op:x?"exists":"notExists",value:""}}
  else if(op==="$in"||op==="$nin"){if(!Array.isArray(x)||!x.length)return null;var ts=x.map(function(y){return mrText(field,y)});if(ts.some(function(y){return y===null||y.indexOf(",")>=0}))return null;row={field:k,op:op==="$in"?"in":"nin",value:ts.join(", ")}}
  else if((field.kind==="date"||field.kind==="date_iso")&&(op==="$gte"||op==="$lt")&&mrAgoDays(x)!==null){row={field:k,op:op==="$gte"?"withinDays":"olderDays",value:mrAgoDays(x)}}
  else if((field.kind==="date"||field.kind==="date_iso")&&(op==="$gt"||op==="$lt")){if(typeof x!=="string"||!/^\d{4}-\d{2}-\d{2}$/.test(x))return null;row={field:k,op:op==="$gt"?"after":"before",value:x}}
  else{var map={$eq:"eq",$ne:"ne",$gt:"gt",$gte:"gte",$lt:"lt",$lte:"lte",$contains:"contains",$startsWith:"startsWith",$endsWith:"endsWith"};
   if(!map[op])return null;var tx=mrText(field,x);if(tx===null)return null;row={field:k,op:map[op],value:tx}}
 }
 if(!row||ops.indexOf(row.op)<0)return null;
 return row;
}
function mrRowsFromFilter(filter,fields){
 if(!mrIsObj(filter))return null;
 var keys=Object.keys(filter),items,join="and";
 if(keys.length===1&&(keys[0]==="$and"||keys[0]==="$or")){
  if(!Array.isArray(filter[keys[0]]))return null;items=filter[keys[0]];join=keys[0]==="$or"?"or":"and";
  if(!items.length)return null;
 }else items=keys.map(function(k){var o={};o[k]=filter[k];return o});
 var rows=[];
 for(var i=0;i<items.length;i++){if(!mrIsObj(items[i]))return null;var r=mrRowOf(items[i],fields);if(!r)return null;rows.push(r)}
 return {join:join,rows:rows};
}
`;

/** The DOM half: renders rows from state, writes the JSON, asks for the count (debounced). */
const BUILDER_DOM_JS = String.raw`
(function(){
 var root=document.getElementById("fb");if(!root)return;
 var fields=JSON.parse(document.getElementById("fb-fields").textContent);
 var ta=document.getElementById("fb-json"),rowsEl=document.getElementById("fb-rows"),joinEl=document.getElementById("fb-join");
 var countEl=document.getElementById("fb-count"),errEl=document.getElementById("fb-error"),syncEl=document.getElementById("fb-sync");
 var countUrl=root.getAttribute("data-count-url");
 var state={join:"and",rows:[]},timer=null,seq=0;
 root.hidden=false;
 function el(tag,attrs,text){var e=document.createElement(tag);for(var a in attrs)e.setAttribute(a,attrs[a]);if(text!=null)e.textContent=text;return e}
 function parseJson(){try{return JSON.parse(ta.value.trim()||"{}")}catch(e){return undefined}}
 function load(){var f=parseJson();var r=f===undefined?null:mrRowsFromFilter(f,fields);
  if(r){state=r;syncEl.hidden=true;render()}else{syncEl.hidden=false}}
 function valueInput(row,field,i){
  var d=MR_OPS[row.op]||{input:"none"};
  if(d.input==="none")return null;
  var label="Value of condition "+(i+1),inp;
  if(field.values&&(d.input==="value")){inp=el("select",{"aria-label":label,"data-role":"value"});
   inp.appendChild(el("option",{value:""},"choose…"));
   field.values.forEach(function(v){var o=el("option",{value:v.value},v.label);if(v.value===row.value)o.selected=true;inp.appendChild(o)});
   if(field.kind==="groups"&&!field.values.length)inp.appendChild(el("option",{value:"",disabled:""},"(no groups yet)"));
   return inp}
  if(field.kind==="boolean"&&d.input==="value"){inp=el("select",{"aria-label":label,"data-role":"value"});["","true","false"].forEach(function(v){var o=el("option",{value:v},v||"choose…");if(v===row.value)o.selected=true;inp.appendChild(o)});return inp}
  var type=d.input==="date"?"date":(d.input==="days"||d.input==="count"||(field.kind==="number"&&d.input==="value"))?"number":"text";
  inp=el("input",{type:type,"aria-label":label,"data-role":"value"});if(type==="number"&&d.input!=="value")inp.setAttribute("min","1");
  inp.value=row.value||"";return inp;
 }
 function render(){
  joinEl.value=state.join;rowsEl.textContent="";
  state.rows.forEach(function(row,i){
   var field=mrFieldOf(fields,row.field)||fields[0];row.field=field.key;
   var ops=mrOpsFor(field.kind);if(!ops.some(function(o){return o.op===row.op}))row.op=ops[0].op;
   var li=el("li",{"class":"row fb-row","data-row":String(i)});
   var fs=el("select",{"aria-label":"Field of condition "+(i+1),"data-role":"field"});
   fields.forEach(function(f){var o=el("option",{value:f.key},f.label);if(f.key===field.key)o.selected=true;fs.appendChild(o)});
   var os=el("select",{"aria-label":"Operator of condition "+(i+1),"data-role":"op"});
   ops.forEach(function(o){var op=el("option",{value:o.op},o.label);if(o.op===row.op)op.selected=true;os.appendChild(op)});
   li.appendChild(fs);li.appendChild(os);
   var vi=valueInput(row,field,i);if(vi)li.appendChild(vi);
   var rm=el("button",{type:"button","class":"secondary small","data-role":"remove","aria-label":"Remove condition "+(i+1)},"Remove");li.appendChild(rm);
   var msg=el("span",{"class":"fb-row-error","id":"fb-row-error-"+i,role:"alert",style:"color:#991b1b;flex-basis:100%"});li.appendChild(msg);
   rowsEl.appendChild(li);
  });
  update(false);
 }
 function update(fromJson){
  if(!fromJson){
   var b=mrBuildFilter(state.join,state.rows,fields);
   document.querySelectorAll(".fb-row-error").forEach(function(e){e.textContent=""});
   if(b.error){var m=document.getElementById("fb-row-error-"+b.row);if(m)m.textContent="Condition "+(b.row+1)+": "+b.error;countEl.textContent="—";errEl.textContent="";return}
   ta.value=JSON.stringify(b.filter,null,1);syncEl.hidden=true;
  }
  schedule();
 }
 function schedule(){clearTimeout(timer);countEl.setAttribute("aria-busy","true");timer=setTimeout(count,300)}
 function count(){
  var my=++seq,f=parseJson();
  if(f===undefined){countEl.textContent="—";countEl.removeAttribute("aria-busy");errEl.textContent="The filter is not valid JSON.";return}
  fetch(countUrl+"?filter="+encodeURIComponent(JSON.stringify(f)),{headers:{accept:"application/json"},credentials:"same-origin"})
   .then(function(r){return r.json().then(function(d){return {ok:r.ok,d:d}})})
   .then(function(x){if(my!==seq)return;countEl.removeAttribute("aria-busy");
    if(x.ok){countEl.textContent=String(x.d.count);errEl.textContent=""}
    else{countEl.textContent="—";errEl.textContent=(x.d.error&&x.d.error.code==="invalid_filter"?"Invalid filter: ":"")+((x.d.error&&x.d.error.message)||"The count failed.")}})
   .catch(function(){if(my!==seq)return;countEl.removeAttribute("aria-busy");countEl.textContent="—";errEl.textContent="The count could not be fetched."});
 }
 rowsEl.addEventListener("change",function(e){var li=e.target.closest(".fb-row");if(!li)return;var i=Number(li.getAttribute("data-row")),row=state.rows[i],role=e.target.getAttribute("data-role");
  if(role==="field"){row.field=e.target.value;row.op="";row.value="";render();return}
  if(role==="op"){row.op=e.target.value;var d=MR_OPS[row.op];if(d&&d.input==="none")row.value="";render();return}
  if(role==="value"){row.value=e.target.value;update(false)}});
 rowsEl.addEventListener("input",function(e){if(e.target.getAttribute("data-role")!=="value")return;var li=e.target.closest(".fb-row");state.rows[Number(li.getAttribute("data-row"))].value=e.target.value;update(false)});
 rowsEl.addEventListener("click",function(e){var b=e.target.closest("button[data-role=remove]");if(!b)return;var li=b.closest(".fb-row");state.rows.splice(Number(li.getAttribute("data-row")),1);render();
  var next=rowsEl.querySelector("select");(next||document.getElementById("fb-add")).focus()});
 document.getElementById("fb-add").addEventListener("click",function(){state.rows.push({field:fields[0].key,op:"",value:""});render();var s=rowsEl.querySelectorAll("select[data-role=field]");if(s.length)s[s.length-1].focus()});
 joinEl.addEventListener("change",function(){state.join=joinEl.value==="or"?"or":"and";update(false)});
 ta.addEventListener("input",function(){var f=parseJson();var r=f===undefined?null:mrRowsFromFilter(f,fields);
  if(r){state=r;syncEl.hidden=true;joinEl.value=state.join;var keep=ta.value;render();ta.value=keep}else{syncEl.hidden=false}schedule()});
 load();schedule();
})();
`;

/** JSON for a <script type="application/json"> element (no "</script>" can end it early). */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
}

/**
 * The builder (hidden until its script runs) and the raw JSON editor (the form's `filter`
 * field, always there). `countUrl` answers `{ count }` or `{ error: { code, message } }`.
 */
export function filterBuilderHtml(opts: { fields: BuilderField[]; filterJson: string; countUrl: string; textareaName?: string }): string {
  // The field list is JSON made safe for a <script> element; the scripts are this module's constants.
  const fields = scriptJson(opts.fields.map(({ key, label, kind, values }) => ({ key, label, kind, ...(values ? { values } : {}) })));
  return render(html`<section aria-labelledby="fb-h" class="card">
<h2 id="fb-h" style="margin-top:0">Who is in it</h2>
<div id="fb" data-count-url="${opts.countUrl}" hidden>
<div class="field"><label for="fb-join">Contacts matching</label><select id="fb-join"><option value="and">all of these conditions (AND)</option><option value="or">any of these conditions (OR)</option></select></div>
<ol id="fb-rows" style="list-style:none;padding:0;margin:0 0 .5rem;display:grid;gap:.5rem"></ol>
<p id="fb-sync" class="muted" role="status" hidden>This filter has a shape the builder cannot show (nesting, several operators on one field or engagement by broadcast): edit it as JSON below.</p>
<div class="actions" style="margin:.5rem 0"><button type="button" class="secondary" id="fb-add">Add condition</button></div>
<p style="font-size:1.1rem;margin:.5rem 0">Matching contacts now: <strong id="fb-count" aria-live="polite">—</strong></p>
<p id="fb-error" role="alert" style="color:#991b1b;margin:0"></p>
</div>
<details id="fb-raw" open><summary>Filter as JSON</summary>
<p class="muted" id="fb-json-h">The filter language: fields <code>email</code>, <code>firstName</code>, <code>status</code>, <code>createdAt</code>, <code>properties.&lt;slug&gt;</code>, <code>groups</code>; operators such as <code>$eq $ne $gt $in $exists $contains</code>; dates as ISO strings or <code>{"$ago":"P30D"}</code>; <code>$and $or $not</code>; <code>{"$engagement":{"event":"opened","since":{"$ago":"P90D"}}}</code>. <code>{}</code> is everyone.</p>
<label for="fb-json">Filter (JSON)</label>
<textarea id="fb-json" name="${opts.textareaName ?? "filter"}" rows="8" spellcheck="false" aria-describedby="fb-json-h" style="font-family:ui-monospace,monospace">${opts.filterJson}</textarea>
</details>
<script type="application/json" id="fb-fields">${trusted(fields)}</script>
<script>${trusted(FILTER_BUILDER_JS)}${trusted(BUILDER_DOM_JS)}</script>
</section>`);
}
