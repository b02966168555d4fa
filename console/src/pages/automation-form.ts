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
 *   definitionRequest(def, update)       the definition checked with the /v1 route's schema
 *
 * The form itself is views/automation-form.ts.
 */
import type { z } from "zod";
import { createAutomationSchema, updateAutomationSchema } from "@mailroom/http/automations-schema.js";
import { all, str } from "../form-values.js";
import { STEP_TYPES, WEEKDAYS, durationFromText, durationWords, isObject, type JsonObject } from "../views/automation-flow.js";

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
export const BRANCHING = new Set(["condition", "wait_for_event"]);
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

/** The draft as the raw editor's JSON (what saving it would send), or "" when a field does not parse. */
export function draftJson(draft: FormDraft): string {
  const built = definitionOfDraft({ ...draft, name: draft.name || "x" });
  return built.ok ? JSON.stringify({ trigger: built.trigger, steps: built.steps, reentry: built.reentry }, null, 2) : "";
}

/**
 * A built definition as the body of POST /v1/automations (or PATCH, `update`), checked with that
 * route's schema: the fields the service takes, or the first issue as a path in the API's form
 * (`steps[1].then`), which the editor shows inside its step.
 */
export function definitionRequest(def: Definition, update: boolean): { ok: true; texts: { name: string; triggerJson: string; stepsJson: string; reentryJson: string } } | { ok: false; path: string; message: string } {
  const body = { name: def.name, trigger: def.trigger, steps: def.steps, reentry: def.reentry };
  const parsed = update ? updateAutomationSchema.safeParse(body) : createAutomationSchema.safeParse(body);
  if (!parsed.success) return { ok: false, ...issueOf(parsed.error) };
  const d = parsed.data;
  return { ok: true, texts: { name: d.name ?? def.name, triggerJson: JSON.stringify(d.trigger), stepsJson: JSON.stringify(d.steps), reentryJson: JSON.stringify(d.reentry ?? "once") } };
}

function issueOf(error: z.ZodError): { path: string; message: string } {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map((p, i) => (typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${String(p)}`)).join("");
  return { path: path || "definition", message: issue?.message ?? "invalid definition" };
}
