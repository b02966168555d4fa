/**
 * The automation editor (DESIGN §9.6): a form per step, no drag and drop. The form posts
 * every field on every button; the console reads it back into a draft, applies the button
 * (add a step, move it up or down, remove it, change its type) and shows the form again, or
 * builds the definition JSON and saves it. So it works without JavaScript; the small script
 * only applies a type change at once and shows the trigger fields of the chosen type.
 *
 * Field names follow the step's place: `steps.2.then.0.template`; the automation unit names
 * errors in the public API's form (`steps[2].then[0].template`), and stepPathOf maps one to
 * the other so an error is shown inside the step it is about.
 *
 *   draftFromForm(body)                  the posted form → FormDraft (text as typed)
 *   draftFromDefinition(name, def)       a saved definition → FormDraft
 *   applyOp(draft, op, body)             add / up / down / remove → the step path to focus
 *   definitionOfDraft(draft)             → { ok, name, trigger, steps, reentry } | { ok: false, path, message }
 *   definitionFromJson(text)             the raw JSON editor's text → the same
 *   automationFormHtml(opts)             the form
 */
import type { BuilderField } from "./filter-builder.js";
import { filterBuilderHtml } from "./filter-builder.js";
import { all, str } from "./form-values.js";
import { escapeHtml } from "./layout.js";
import {
  STEP_LABELS, STEP_TYPES, TRIGGER_LABELS, TRIGGER_TYPES, WEEKDAYS, durationFromText, durationWords, isObject, type JsonObject,
} from "./automation-flow.js";

export interface FormStep {
  id: string;
  type: string;
  /** The type's fields as text, as typed (a JSON field stays its text until saved). */
  fields: Record<string, string>;
  days: string[];
  then: FormStep[];
  else: FormStep[];
  /** The type the form showed (a changed type renames an id the editor gave). */
  was?: string;
}

export interface FormDraft {
  name: string;
  trigger: Record<string, string>;
  /** The trigger's filter as JSON text ("" or "{}": none). */
  triggerFilter: string;
  reentry: string;
  reentryAfter: string;
  steps: FormStep[];
}

export interface Definition {
  name: string;
  trigger: JsonObject;
  steps: JsonObject[];
  reentry: unknown;
}

export type Built = ({ ok: true } & Definition) | { ok: false; path: string; message: string };

const STEP_FIELDS = ["duration", "time", "timezone", "template", "trackOpens", "trackClicks", "filter", "event", "timeout", "properties", "groupId"];
const TRIGGER_FIELDS = ["type", "name", "groupId", "property", "broadcastId", "template"];
/** Which trigger fields each trigger type uses. */
const TRIGGER_FIELDS_OF: Record<string, string[]> = {
  contact_created: [], event: ["name"], group_joined: ["groupId"], property_changed: ["property"],
  email_opened: ["broadcastId", "template"], email_clicked: ["broadcastId", "template"],
};
const BRANCHING = new Set(["condition", "wait_for_event"]);
const MAX_DEPTH = 12;

export const emptyDraft = (): FormDraft => ({
  name: "", trigger: { type: "contact_created" }, triggerFilter: "{}", reentry: "once", reentryAfter: "", steps: [],
});

// --- reading ---------------------------------------------------------------------------------

function stepsFromForm(body: unknown, prefix: string, depth: number): FormStep[] {
  const out: FormStep[] = [];
  if (depth > MAX_DEPTH) return out;
  for (let i = 0; i < 500 && str(body, `${prefix}.${i}.type`); i++) {
    const p = `${prefix}.${i}`;
    const fields: Record<string, string> = {};
    for (const key of STEP_FIELDS) fields[key] = str(body, `${p}.${key}`);
    out.push({
      id: str(body, `${p}.id`).trim(), type: str(body, `${p}.type`), fields, days: all(body, `${p}.days`),
      then: stepsFromForm(body, `${p}.then`, depth + 1), else: stepsFromForm(body, `${p}.else`, depth + 1),
      was: str(body, `${p}.was`),
    });
  }
  return out;
}

export function draftFromForm(body: unknown): FormDraft {
  const trigger: Record<string, string> = {};
  for (const key of TRIGGER_FIELDS) trigger[key] = str(body, `trigger.${key}`).trim();
  return {
    name: str(body, "name").trim(),
    trigger,
    triggerFilter: str(body, "trigger.filter"),
    reentry: str(body, "reentry") || "once",
    reentryAfter: str(body, "reentry.after"),
    steps: stepsFromForm(body, "steps", 0),
  };
}

const pretty = (v: unknown) => JSON.stringify(v, null, 1) ?? "";
const textOf = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));

function formStepOf(step: unknown, depth = 0): FormStep {
  const s = isObject(step) ? step : {};
  const type = textOf(s.type);
  const settings = isObject(s.settings) ? s.settings : {};
  const flag = (v: unknown) => (typeof v === "boolean" ? String(v) : "");
  const fields: Record<string, string> = {
    duration: typeof s.duration === "string" ? durationWords(s.duration) : "",
    time: textOf(s.time),
    timezone: textOf(s.timezone),
    template: textOf(s.template),
    trackOpens: flag(settings.trackOpens),
    trackClicks: flag(settings.trackClicks),
    filter: s.filter === undefined ? "{}" : pretty(s.filter),
    event: textOf(s.event),
    timeout: typeof s.timeout === "string" ? durationWords(s.timeout) : "",
    properties: s.properties === undefined ? "{}" : pretty(s.properties),
    groupId: textOf(s.groupId),
  };
  const branch = (v: unknown) => (Array.isArray(v) && depth < MAX_DEPTH ? v.map((x) => formStepOf(x, depth + 1)) : []);
  return { id: textOf(s.id), type, fields, days: Array.isArray(s.days) ? s.days.map(String) : [], then: branch(s.then), else: branch(s.else) };
}

export function draftFromDefinition(name: string, def: { trigger: unknown; steps: unknown; reentry: unknown }): FormDraft {
  const t = isObject(def.trigger) ? def.trigger : {};
  const trigger: Record<string, string> = {};
  for (const key of TRIGGER_FIELDS) trigger[key] = textOf(t[key]);
  const reentry = def.reentry;
  return {
    name,
    trigger,
    triggerFilter: t.filter === undefined ? "{}" : pretty(t.filter),
    reentry: isObject(reentry) ? "after" : reentry === "always" ? "always" : "once",
    reentryAfter: isObject(reentry) && typeof reentry.after === "string" ? durationWords(reentry.after) : "",
    steps: Array.isArray(def.steps) ? def.steps.map((s) => formStepOf(s)) : [],
  };
}

// --- buttons ---------------------------------------------------------------------------------

/** The list a path names: "steps", "steps.1.then", "steps.1.then.0.else". */
function listAt(draft: FormDraft, path: string): FormStep[] | undefined {
  const parts = path.split(".");
  if (parts[0] !== "steps") return undefined;
  let list = draft.steps;
  for (let i = 1; i < parts.length; i += 2) {
    const step = list[Number(parts[i])];
    const branch = parts[i + 1];
    if (!step || !/^\d+$/.test(parts[i]) || (branch !== "then" && branch !== "else")) return undefined;
    list = step[branch];
  }
  return list;
}

function splitStepPath(path: string): { list: string; index: number } | undefined {
  const m = /^(steps(?:\.\d+\.(?:then|else))*)\.(\d+)$/.exec(path);
  return m ? { list: m[1], index: Number(m[2]) } : undefined;
}

function allIds(steps: FormStep[], out = new Set<string>()): Set<string> {
  for (const s of steps) {
    out.add(s.id);
    allIds(s.then, out);
    allIds(s.else, out);
  }
  return out;
}

const DEFAULT_FIELDS: Record<string, Record<string, string>> = {
  wait: { duration: "1 day" },
  wait_until: { time: "09:00" },
  condition: { filter: "{}" },
  wait_for_event: { timeout: "3 days" },
  update_contact: { properties: "{}" },
};

function freshId(draft: FormDraft, type: string): string {
  const ids = allIds(draft.steps);
  let n = 1;
  while (ids.has(`${type}_${n}`)) n++;
  return `${type}_${n}`;
}

function newStep(draft: FormDraft, type: string): FormStep {
  const fields: Record<string, string> = {};
  for (const key of STEP_FIELDS) fields[key] = DEFAULT_FIELDS[type]?.[key] ?? "";
  return { id: freshId(draft, type), type, fields, days: [], then: [], else: [] };
}

/**
 * Applies a button of the form to the draft: `add:<list>` (the type from `<list>.__add`),
 * `up:<step>`, `down:<step>`, `remove:<step>`; anything else only shows the form again (a
 * type change). Returns the id of the element to bring into view.
 */
export function applyOp(draft: FormDraft, op: string, body: unknown): string | undefined {
  const [verb, path = ""] = op.split(/:(.*)/s);
  if (verb === "add") {
    const list = listAt(draft, path);
    if (!list) return undefined;
    const type = str(body, `${path}.__add`);
    list.push(newStep(draft, STEP_TYPES.includes(type) ? type : "send"));
    return `edit-${path}.${list.length - 1}`;
  }
  const at = splitStepPath(path);
  const list = at && listAt(draft, at.list);
  if (!at || !list || at.index >= list.length) return undefined;
  const { index } = at;
  const step = list[index];
  if (verb === "type" && step.was && step.was !== step.type) {
    // An id the editor made up ("send_2") follows the type; one a person chose stays.
    if (step.id.startsWith(`${step.was}_`) && /^\d+$/.test(step.id.slice(step.was.length + 1))) step.id = freshId(draft, step.type);
    for (const [key, value] of Object.entries(DEFAULT_FIELDS[step.type] ?? {})) if (!step.fields[key]) step.fields[key] = value;
  }
  if (verb === "remove") {
    list.splice(index, 1);
    return `add-${at.list}`;
  }
  const to = verb === "up" ? index - 1 : verb === "down" ? index + 1 : index;
  if (to < 0 || to >= list.length || to === index) return `edit-${path}`;
  [list[index], list[to]] = [list[to], list[index]];
  return `edit-${at.list}.${to}`;
}

// --- building the definition ----------------------------------------------------------------

class PathError extends Error {
  constructor(readonly path: string, message: string) {
    super(message);
  }
}

function parseJsonField(textValue: string, path: string, what: string): unknown {
  const t = textValue.trim();
  if (!t) return {};
  try {
    return JSON.parse(t);
  } catch {
    throw new PathError(path, `${what} is not valid JSON`);
  }
}

function stepJson(step: FormStep, path: string): JsonObject {
  const f = step.fields;
  const base: JsonObject = { id: step.id, type: step.type };
  const branches = (out: JsonObject) => {
    out.then = step.then.map((s, i) => stepJson(s, `${path}.then[${i}]`));
    if (step.else.length) out.else = step.else.map((s, i) => stepJson(s, `${path}.else[${i}]`));
    return out;
  };
  switch (step.type) {
    case "wait": return { ...base, duration: durationFromText(f.duration ?? "") };
    case "wait_until": {
      const days = WEEKDAYS.filter((d) => step.days.includes(d));
      return { ...base, time: (f.time ?? "").trim(), ...(days.length && days.length < 7 ? { days } : {}), ...(f.timezone ? { timezone: f.timezone } : {}) };
    }
    case "send": {
      const settings: JsonObject = {};
      if (f.trackOpens === "true" || f.trackOpens === "false") settings.trackOpens = f.trackOpens === "true";
      if (f.trackClicks === "true" || f.trackClicks === "false") settings.trackClicks = f.trackClicks === "true";
      return { ...base, template: (f.template ?? "").trim(), ...(Object.keys(settings).length ? { settings } : {}) };
    }
    case "condition": return branches({ ...base, filter: parseJsonField(f.filter ?? "", `${path}.filter`, "the filter") });
    case "wait_for_event": return branches({ ...base, event: (f.event ?? "").trim(), timeout: durationFromText(f.timeout ?? "") });
    case "update_contact": {
      const properties = parseJsonField(f.properties ?? "", `${path}.properties`, "the properties");
      if (!isObject(properties)) throw new PathError(`${path}.properties`, "the properties must be a JSON object such as {\"plan\": \"pro\"}");
      return { ...base, properties };
    }
    case "add_to_group":
    case "remove_from_group": return { ...base, groupId: (f.groupId ?? "").trim() };
    default: return base;
  }
}

function triggerJson(draft: FormDraft): JsonObject {
  const type = draft.trigger.type || "contact_created";
  const out: JsonObject = { type };
  for (const key of TRIGGER_FIELDS_OF[type] ?? []) {
    const v = draft.trigger[key];
    // The email triggers' broadcast and template are optional: an empty field means any.
    if (v || !type.startsWith("email_")) out[key] = v ?? "";
  }
  const filter = parseJsonField(draft.triggerFilter, "trigger.filter", "the filter");
  if (!isObject(filter) || Object.keys(filter).length) out.filter = filter;
  return out;
}

function reentryJson(draft: FormDraft): unknown {
  if (draft.reentry === "always") return "always";
  if (draft.reentry === "after") return { after: durationFromText(draft.reentryAfter) };
  return "once";
}

export function definitionOfDraft(draft: FormDraft): Built {
  if (!draft.name) return { ok: false, path: "name", message: "enter a name" };
  try {
    return {
      ok: true, name: draft.name, trigger: triggerJson(draft),
      steps: draft.steps.map((s, i) => stepJson(s, `steps[${i}]`)), reentry: reentryJson(draft),
    };
  } catch (err) {
    if (err instanceof PathError) return { ok: false, path: err.path, message: err.message };
    throw err;
  }
}

/** The raw JSON editor: `{ "trigger": …, "steps": […], "reentry"?: … }` (its name from the form). */
export function definitionFromJson(name: string, textValue: string): Built {
  let value: unknown;
  try {
    value = JSON.parse(textValue);
  } catch (err) {
    return { ok: false, path: "definition", message: `not valid JSON (${(err as Error).message})` };
  }
  if (!isObject(value)) return { ok: false, path: "definition", message: "must be an object with trigger, steps and reentry" };
  if (!name) return { ok: false, path: "name", message: "enter a name" };
  return { ok: true, name, trigger: value.trigger as JsonObject, steps: value.steps as JsonObject[], reentry: value.reentry ?? "once" };
}

/** `steps[1].then[0].template` → "steps.1.then.0", the step an error is about (undefined: not a step's). */
export function stepPathOf(errorPath: string): string | undefined {
  const m = /^steps((?:\[\d+\](?:\.(?:then|else)(?=\[))?)+)/.exec(errorPath);
  if (!m) return undefined;
  return `steps${m[1].replace(/\[(\d+)\]/g, ".$1")}`;
}

// --- the form --------------------------------------------------------------------------------

export interface FormContext {
  action: string;
  cancelUrl: string;
  csrf: string;
  submitLabel: string;
  templates: string[];
  groups: Array<{ id: string; label: string }>;
  /** The trigger filter's builder fields (filter-builder.ts) and its count URL. */
  filterFields: BuilderField[];
  countUrl: string;
  error?: { path: string; message: string };
  /** The element to bring into view (after a button): its id. */
  focus?: string;
  /** The raw JSON editor's text (what was typed there, or the draft as JSON). */
  definitionJson: string;
  jsonOpen?: boolean;
}

const attr = escapeHtml;
const option = (value: string, label: string, selected: string) =>
  `<option value="${attr(value)}"${value === selected ? " selected" : ""}>${escapeHtml(label)}</option>`;

function input(id: string, name: string, label: string, value: string, extra = ""): string {
  return `<div class="field"><label for="${attr(id)}">${escapeHtml(label)}</label><input id="${attr(id)}" name="${attr(name)}" value="${attr(value)}"${extra}></div>`;
}

/** "2 › then › 1" for steps.1.then.0 (what people count, from 1). */
function humanPath(path: string): string {
  return path.split(".").slice(1).map((p) => (/^\d+$/.test(p) ? String(Number(p) + 1) : p)).join(" › ");
}

function groupSelect(id: string, name: string, label: string, value: string, groups: FormContext["groups"]): string {
  const known = groups.some((g) => g.id === value);
  const options = [option("", "choose a group…", value), ...groups.map((g) => option(g.id, g.label, value)),
    ...(value && !known ? [option(value, value, value)] : [])].join("");
  return `<div class="field"><label for="${attr(id)}">${escapeHtml(label)}</label><select id="${attr(id)}" name="${attr(name)}">${options}</select></div>`;
}

function stepFieldsHtml(step: FormStep, p: string, ctx: FormContext): string {
  const f = step.fields;
  const id = (key: string) => `f-${p}.${key}`;
  const name = (key: string) => `${p}.${key}`;
  switch (step.type) {
    case "wait":
      return input(id("duration"), name("duration"), "Wait for", f.duration ?? "", ` required placeholder="2 days, 1 hour, 30 seconds or PT2S"`);
    case "wait_until": {
      const days = WEEKDAYS.map((d) => `<div class="check"><input type="checkbox" id="${attr(`${id("days")}.${d}`)}" name="${attr(name("days"))}" value="${d}"${step.days.includes(d) ? " checked" : ""}><label for="${attr(`${id("days")}.${d}`)}">${d}</label></div>`).join("");
      return `<div class="row">${input(id("time"), name("time"), "Time (HH:MM)", f.time ?? "", ` type="time" required`)}
<div class="field"><label for="${attr(id("timezone"))}">In the timezone of</label><select id="${attr(id("timezone"))}" name="${attr(name("timezone"))}">${option("", "the contact (default)", f.timezone ?? "")}${option("contact", "the contact", f.timezone ?? "")}${option("workspace", "the workspace", f.timezone ?? "")}</select></div></div>
<fieldset class="days"><legend>On these days (none: every day)</legend><div class="row">${days}</div></fieldset>`;
    }
    case "send": {
      const track = (key: string, label: string) => `<div class="field"><label for="${attr(id(key))}">${label}</label><select id="${attr(id(key))}" name="${attr(name(key))}">${option("", "default (on)", f[key] ?? "")}${option("true", "on", f[key] ?? "")}${option("false", "off", f[key] ?? "")}</select></div>`;
      return `<div class="row">${input(id("template"), name("template"), "Template", f.template ?? "", ` required list="automation-templates"`)}${track("trackOpens", "Track opens")}${track("trackClicks", "Track clicks")}</div>`;
    }
    case "condition":
      return `<div class="field"><label for="${attr(id("filter"))}">If the contact matches (filter JSON)</label><textarea id="${attr(id("filter"))}" name="${attr(name("filter"))}" rows="3" spellcheck="false" style="font-family:ui-monospace,monospace" aria-describedby="filter-help">${escapeHtml(f.filter ?? "")}</textarea></div>`;
    case "wait_for_event":
      return `<div class="row">${input(id("event"), name("event"), "Event", f.event ?? "", ` required list="automation-events" placeholder="purchase, email_opened, email_clicked or email_replied"`)}
${input(id("timeout"), name("timeout"), "Wait at most", f.timeout ?? "", ` required placeholder="3 days"`)}</div>`;
    case "update_contact":
      return `<div class="field"><label for="${attr(id("properties"))}">Set properties (JSON object; null clears one)</label><textarea id="${attr(id("properties"))}" name="${attr(name("properties"))}" rows="3" spellcheck="false" style="font-family:ui-monospace,monospace" placeholder='{"plan": "pro"}'>${escapeHtml(f.properties ?? "")}</textarea></div>`;
    case "add_to_group":
    case "remove_from_group":
      return groupSelect(id("groupId"), name("groupId"), "Group", f.groupId ?? "", ctx.groups);
    default:
      return "";
  }
}

function addControl(list: string): string {
  const id = `add-${list}`;
  const branch = /^(.*)\.(then|else)$/.exec(list);
  const label = branch ? `Add a step to the ${branch[2]} branch of step ${humanPath(branch[1])}` : "Add a step at the end";
  return `<div class="row add-step" id="${attr(id)}"><div class="field"><label for="${attr(`${id}-type`)}">${escapeHtml(label)}</label>
<select id="${attr(`${id}-type`)}" name="${attr(`${list}.__add`)}">${STEP_TYPES.map((t) => option(t, STEP_LABELS[t], "send")).join("")}</select></div>
<div class="field"><button type="submit" class="secondary" name="op" value="add:${attr(list)}" formnovalidate aria-label="${attr(label)}">Add step</button></div></div>`;
}

function stepHtml(step: FormStep, p: string, index: number, count: number, ctx: FormContext): string {
  const human = humanPath(p);
  const errorHere = ctx.error && stepPathOf(ctx.error.path) === p
    ? `<p class="step-error" role="alert"><strong>${escapeHtml(ctx.error.path)}</strong>: ${escapeHtml(ctx.error.message)}</p>` : "";
  const branches = BRANCHING.has(step.type)
    ? `<div class="edit-branches">${(["then", "else"] as const).map((b) => {
      const label = step.type === "condition" ? (b === "then" ? "Then (the contact matches)" : "Else (it does not; optional)")
        : (b === "then" ? "Then (the event came in time)" : "Else (timed out; optional)");
      return `<div class="edit-branch" data-branch="${b}"><p class="branch-label">${escapeHtml(label)}</p>${stepsListHtml(step[b], `${p}.${b}`, ctx)}</div>`;
    }).join("")}</div>` : "";
  const button = (verb: string, label: string, disabled: boolean, cls = "secondary small") =>
    `<button type="submit" class="${cls}" name="op" value="${verb}:${attr(p)}" formnovalidate${disabled ? " disabled" : ""} aria-label="${attr(`${label} step ${human}`)}">${escapeHtml(label)}</button>`;
  return `<li><fieldset class="step-edit${errorHere ? " has-error" : ""}" id="edit-${attr(p)}" data-path="${attr(p)}"><legend>Step ${escapeHtml(human)}: ${escapeHtml(STEP_LABELS[step.type] ?? step.type)}</legend>${errorHere}
<input type="hidden" name="${attr(`${p}.was`)}" value="${attr(step.type)}">
<div class="row">${input(`f-${p}.id`, `${p}.id`, "Step id", step.id, ` required maxlength="64" size="14"`)}
<div class="field"><label for="${attr(`f-${p}.type`)}">Type</label><select id="${attr(`f-${p}.type`)}" name="${attr(`${p}.type`)}" data-retype>${STEP_TYPES.map((t) => option(t, STEP_LABELS[t], step.type)).join("")}</select></div>
<div class="field js-hide"><button type="submit" class="secondary" name="op" value="type:${attr(p)}" formnovalidate data-apply>Apply type</button></div></div>
${stepFieldsHtml(step, p, ctx)}${branches}
<div class="actions step-actions">${button("up", "Move up", index === 0)}${button("down", "Move down", index === count - 1)}${button("remove", "Remove", false, "secondary small")}</div></fieldset></li>`;
}

function stepsListHtml(steps: FormStep[], list: string, ctx: FormContext): string {
  const items = steps.map((s, i) => stepHtml(s, `${list}.${i}`, i, steps.length, ctx)).join("");
  return `<ol class="edit-steps">${items}</ol>${addControl(list)}`;
}

function triggerHtml(draft: FormDraft, ctx: FormContext): string {
  const t = draft.trigger;
  const type = t.type || "contact_created";
  const wrap = (forTypes: string[], inner: string) =>
    `<div data-trigger-for="${forTypes.join(" ")}"${forTypes.includes(type) ? "" : " data-inactive"}>${inner}</div>`;
  return `<fieldset class="card" id="edit-trigger"><legend>Trigger: when a contact enters</legend>
<div class="field"><label for="trigger-type">When</label><select id="trigger-type" name="trigger.type">${TRIGGER_TYPES.map((x) => option(x, TRIGGER_LABELS[x], type)).join("")}</select></div>
${wrap(["event"], input("trigger-name", "trigger.name", "Event name (for “an event is received”)", t.name ?? "", ` placeholder="signed_up"`))}
${wrap(["group_joined"], groupSelect("trigger-groupId", "trigger.groupId", "Group (for “joins a group”)", t.groupId ?? "", ctx.groups))}
${wrap(["property_changed"], input("trigger-property", "trigger.property", "Property slug (for “a property changes”)", t.property ?? "", ` placeholder="plan"`))}
${wrap(["email_opened", "email_clicked"], `<div class="row">${input("trigger-broadcastId", "trigger.broadcastId", "Of broadcast (id; optional)", t.broadcastId ?? "")}${input("trigger-template", "trigger.template", "Or of template (name; optional)", t.template ?? "", ` list="automation-templates"`)}</div>`)}
</fieldset>`;
}

// Applies a type change at once, keeps the trigger's fields to its type, and brings the
// step a button acted on back into view (the form answers at the same address).
const FORM_JS = String.raw`(function(){var form=document.getElementById("automation-form");if(!form)return;
form.querySelectorAll(".js-hide").forEach(function(e){e.hidden=true});
form.addEventListener("change",function(e){var s=e.target;if(s.hasAttribute&&s.hasAttribute("data-retype")){var b=s.closest("fieldset").querySelector("button[data-apply]");if(b)form.requestSubmit(b)}
if(s.id==="trigger-type")showTrigger()});
function showTrigger(){var t=document.getElementById("trigger-type").value;form.querySelectorAll("[data-trigger-for]").forEach(function(d){d.hidden=d.getAttribute("data-trigger-for").split(" ").indexOf(t)<0})}
showTrigger();
var focus=form.getAttribute("data-focus");if(focus){var el=document.getElementById(focus);if(el){el.scrollIntoView({block:"center"});var i=el.querySelector("input:not([type=hidden]),select,textarea,button");if(i)i.focus({preventScroll:true})}}})();`;

const FORM_STYLE = `<style>
ol.edit-steps{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
fieldset.step-edit{background:#fff;border:2px solid #6b7280;border-radius:8px;padding:.5rem .75rem;margin:0}
fieldset.step-edit.has-error{border-color:#b91c1c}
fieldset.step-edit>legend{font-weight:700;padding:0 .25rem}
fieldset.days{border:0;padding:0;margin:0 0 .5rem}fieldset.days legend{font-weight:600;padding:0}
.edit-branches{display:grid;grid-template-columns:repeat(auto-fit,minmax(18rem,1fr));gap:1rem;margin:.5rem 0;padding-left:.75rem;border-left:3px solid #d4d4d8}
.edit-branch .branch-label{font-weight:600;margin:0 0 .5rem}
.step-actions{margin:.5rem 0 0}
.step-error,.form-error{color:#991b1b;margin:.25rem 0 .5rem}
[data-inactive]{opacity:.8}
fieldset.step-edit button:disabled{opacity:.45;cursor:not-allowed}
</style>`;

export function automationFormHtml(draft: FormDraft, ctx: FormContext): string {
  const error = ctx.error
    ? `<div class="flash error form-error" role="alert" id="form-error"><strong>Not saved.</strong> <code>${escapeHtml(ctx.error.path)}</code>: ${escapeHtml(ctx.error.message)}${stepPathOf(ctx.error.path) ? ` (<a href="#edit-${attr(stepPathOf(ctx.error.path)!)}">go to step ${escapeHtml(humanPath(stepPathOf(ctx.error.path)!))}</a>)` : ""}</div>`
    : "";
  const builder = filterBuilderHtml({ fields: ctx.filterFields, filterJson: draft.triggerFilter || "{}", countUrl: ctx.countUrl, textareaName: "trigger.filter" })
    .replace(">Who is in it<", ">Who may enter (optional filter)<");
  const reentry = `<fieldset class="card"><legend>Entering again</legend><div class="row">
<div class="field"><label for="reentry">A contact may enter</label><select id="reentry" name="reentry">${option("once", "once only", draft.reentry)}${option("always", "again whenever it has no active run", draft.reentry)}${option("after", "again after a while", draft.reentry)}</select></div>
${input("reentry-after", "reentry.after", "After (for “again after a while”)", draft.reentryAfter, ` placeholder="30 days"`)}</div></fieldset>`;
  const datalists = `<datalist id="automation-templates">${ctx.templates.map((t) => `<option value="${attr(t)}"></option>`).join("")}</datalist>
<datalist id="automation-events"><option value="email_opened"></option><option value="email_clicked"></option><option value="email_replied"></option></datalist>`;
  return `${FORM_STYLE}${error}
<form method="post" action="${attr(ctx.action)}" id="automation-form"${ctx.focus ? ` data-focus="${attr(ctx.focus)}"` : ""}>${ctx.csrf}
<button type="submit" name="op" value="save" class="sr-only" tabindex="-1" aria-hidden="true">Save</button>
<div class="card"><div class="field"><label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${attr(draft.name)}" style="width:100%"></div></div>
${triggerHtml(draft, ctx)}
${builder}
<section aria-labelledby="steps-h" class="card"><h2 id="steps-h" style="margin-top:0">Steps</h2>
<p class="muted" id="filter-help">Steps run in order. A condition's filter is JSON in the filter language (for example <code>{"properties.plan": "pro"}</code>). Durations: "2 days", "1 hour 30 minutes", "30 seconds" or ISO 8601 (PT2S, P1D).</p>
${stepsListHtml(draft.steps, "steps", ctx)}</section>
${reentry}
${datalists}
<div class="actions"><button type="submit" name="op" value="save">${escapeHtml(ctx.submitLabel)}</button><a class="button secondary" href="${attr(ctx.cancelUrl)}">Cancel</a></div>
<details class="card" id="json-editor"${ctx.jsonOpen ? " open" : ""}><summary>Edit the whole definition as JSON</summary>
<p class="muted" id="definition-h">The public API's shape: <code>{"trigger": {…}, "steps": […], "reentry": "once"}</code>. Saving the JSON replaces the steps above; the name comes from the Name field.</p>
<label for="definition">Definition (JSON)</label><textarea id="definition" name="definition" rows="16" spellcheck="false" aria-describedby="definition-h" style="font-family:ui-monospace,monospace">${escapeHtml(ctx.definitionJson)}</textarea>
<div class="actions"><button type="submit" class="secondary" name="op" value="json" formnovalidate>Save the JSON</button></div></details>
</form><script>${FORM_JS}</script>`;
}

/** The draft as the raw editor's JSON (what saving it would send), or "" when a field does not parse. */
export function draftJson(draft: FormDraft): string {
  const built = definitionOfDraft({ ...draft, name: draft.name || "x" });
  return built.ok ? JSON.stringify({ trigger: built.trigger, steps: built.steps, reentry: built.reentry }, null, 2) : "";
}
