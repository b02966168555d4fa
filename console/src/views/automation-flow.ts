/**
 * An automation in words and as a vertical flow (DESIGN §9.6), for the console's automation
 * page. Definitions arrive as the public JSON (the automation unit validated them), read here
 * loosely: a shape this code does not know is shown as JSON, never an error.
 *
 *   describeTrigger(trigger, names)   "When a contact is created, if plan is pro"
 *   describeStep(step, names)         "Wait 2 days", "Send template welcome", "If plan is pro"
 *   describeReentry(reentry)          "Each contact enters once"
 *   describeFilter(filter, names)     "plan is pro and in group VIP"
 *   durationWords(iso)                "PT2S" → "2 seconds" (as given when it does not parse)
 *   flowView(steps, stats, names)     nested <ol> of step boxes with live-count cells
 *                                     ([data-stats=<stepId>] [data-count=entered|waiting|completed|exited])
 */
import { html, type Html } from "./html.js";

export type Json = unknown;
export type JsonObject = Record<string, unknown>;

/** What names the words use instead of ids (groups by id → label). */
export interface Names {
  groups: Map<string, string>;
}

export interface StepCounts {
  entered: number;
  waiting: number;
  completed: number;
  exited: number;
}

export const COUNT_KEYS = ["entered", "waiting", "completed", "exited"] as const;

export const STEP_LABELS: Record<string, string> = {
  wait: "Wait",
  wait_until: "Wait until",
  send: "Send email",
  condition: "Condition",
  wait_for_event: "Wait for event",
  update_contact: "Update contact",
  add_to_group: "Add to group",
  remove_from_group: "Remove from group",
  exit: "Exit",
};
export const STEP_TYPES = Object.keys(STEP_LABELS);

export const TRIGGER_LABELS: Record<string, string> = {
  contact_created: "A contact is created",
  event: "An event is received",
  group_joined: "A contact joins a group",
  property_changed: "A property changes",
  email_opened: "An email is opened",
  email_clicked: "A link in an email is clicked",
};
export const TRIGGER_TYPES = Object.keys(TRIGGER_LABELS);

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
const DAY_NAMES: Record<string, string> = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };

export const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);
const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v) ?? "");
const json = (v: unknown) => JSON.stringify(v) ?? "";

// --- durations ---------------------------------------------------------------------------

const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;
const UNITS: Array<[string, number]> = [["week", 604_800], ["day", 86_400], ["hour", 3_600], ["minute", 60], ["second", 1]];

/** Seconds of an ISO 8601 duration in weeks, days, hours, minutes, seconds; undefined otherwise. */
export function durationSeconds(iso: string): number | undefined {
  const m = ISO_DURATION.exec(iso.trim().toUpperCase());
  if (!m || iso.trim().toUpperCase() === "P" || iso.trim().toUpperCase().endsWith("T")) return undefined;
  const [w, d, h, min, s] = m.slice(1).map((x) => Number(x ?? 0));
  return w * 604_800 + d * 86_400 + h * 3_600 + min * 60 + s;
}

/** "P2D" → "2 days", "PT90M" → "90 minutes"; a duration it cannot read stays as given. */
export function durationWords(iso: unknown): string {
  if (typeof iso !== "string") return text(iso);
  const seconds = durationSeconds(iso);
  if (seconds === undefined || seconds === 0) return iso;
  for (const [unit, size] of UNITS) {
    if (seconds % size === 0) {
      const n = seconds / size;
      return `${n} ${unit}${n === 1 ? "" : "s"}`;
    }
  }
  return iso;
}

const WORD_UNITS: Array<[RegExp, number]> = [
  [/^(w|wk|wks|week|weeks)$/, 604_800], [/^(d|day|days)$/, 86_400], [/^(h|hr|hrs|hour|hours)$/, 3_600],
  [/^(m|min|mins|minute|minutes)$/, 60], [/^(s|sec|secs|second|seconds)$/, 1],
];

/**
 * What the form's duration field means: an ISO 8601 duration as is, or words such as
 * "2 days", "1 hour 30 minutes", "90s". Anything else is passed on unchanged, so the
 * automation unit names it (with its path) as the invalid duration it is.
 */
export function durationFromText(input: string): string {
  const t = input.trim();
  if (/^p/i.test(t)) return t.toUpperCase();
  const words = t.toLowerCase().replace(/,|\band\b/g, " ").trim();
  if (!/^(\d+\s*[a-z]+\s*)+$/.test(words)) return t;
  let seconds = 0;
  for (const [, n, unit] of words.matchAll(/(\d+)\s*([a-z]+)/g)) {
    const found = WORD_UNITS.find(([re]) => re.test(unit));
    if (!found) return t;
    seconds += Number(n) * found[1];
  }
  return isoOfSeconds(seconds);
}

function isoOfSeconds(total: number): string {
  if (total > 0 && total % 604_800 === 0) return `P${total / 604_800}W`;
  const d = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3_600);
  const m = Math.floor((total % 3_600) / 60);
  const s = total % 60;
  const time = `${h ? `${h}H` : ""}${m ? `${m}M` : ""}${s ? `${s}S` : ""}`;
  if (!d && !time) return "PT0S";
  return `P${d ? `${d}D` : ""}${time ? `T${time}` : ""}`;
}

// --- filters -------------------------------------------------------------------------------

const OP_WORDS: Record<string, string> = {
  $eq: "is", $ne: "is not", $gt: "is greater than", $gte: "is at least", $lt: "is less than", $lte: "is at most",
  $contains: "contains", $startsWith: "starts with", $endsWith: "ends with", $in: "is one of", $nin: "is none of",
};

function fieldLabel(key: string): string {
  if (key.startsWith("properties.")) return key.slice("properties.".length);
  return key;
}

function valueWords(v: unknown): string {
  if (isObject(v) && typeof v.$ago === "string" && Object.keys(v).length === 1) return `${durationWords(v.$ago)} ago`;
  if (Array.isArray(v)) return v.map(valueWords).join(", ");
  return text(v);
}

function conditionWords(key: string, v: unknown, names: Names): string {
  if (key === "groups") {
    const group = (id: unknown) => names.groups.get(String(id)) ?? text(id);
    if (!isObject(v)) return `in group ${group(v)}`;
    if ("$ne" in v && Object.keys(v).length === 1) return `not in group ${group(v.$ne)}`;
    if ("$in" in v && Array.isArray(v.$in) && Object.keys(v).length === 1) return `in any of the groups ${v.$in.map(group).join(", ")}`;
    return `groups ${json(v)}`;
  }
  const label = fieldLabel(key);
  if (!isObject(v)) return `${label} is ${valueWords(v)}`;
  if (isObject(v) && "$ago" in v) return `${label} is ${valueWords(v)}`;
  const parts = Object.entries(v).map(([op, x]) => {
    if (op === "$exists") return `${label} ${x ? "is set" : "is not set"}`;
    const words = OP_WORDS[op];
    return words ? `${label} ${words} ${valueWords(x)}` : `${label} ${json({ [op]: x })}`;
  });
  return parts.join(" and ");
}

function engagementWords(ev: unknown, negated: boolean): string {
  if (!isObject(ev)) return json(ev);
  const event = text(ev.event);
  const min = typeof ev.min === "number" && ev.min > 1 ? ` at least ${ev.min} times` : "";
  const since = isObject(ev.since) && typeof ev.since.$ago === "string" ? ` in the last ${durationWords(ev.since.$ago)}` : "";
  const broadcast = typeof ev.broadcastId === "string" ? ` (broadcast ${ev.broadcastId})` : "";
  return `${negated ? "was never" : "was"} ${event}${min}${since}${broadcast}`;
}

/** A §9.4 filter in words; parts it does not know are shown as JSON. `{}` is "everyone". */
export function describeFilter(filter: unknown, names: Names, nested = false): string {
  if (!isObject(filter)) return json(filter);
  const keys = Object.keys(filter);
  if (!keys.length) return "everyone";
  const parts = keys.map((k) => {
    const v = filter[k];
    if ((k === "$and" || k === "$or") && Array.isArray(v)) {
      const inner = v.map((x) => describeFilter(x, names, true)).join(k === "$and" ? " and " : " or ");
      return keys.length > 1 || nested ? `(${inner})` : inner;
    }
    if (k === "$not") {
      if (isObject(v) && Object.keys(v).length === 1 && "$engagement" in v) return engagementWords(v.$engagement, true);
      return `not (${describeFilter(v, names, true)})`;
    }
    if (k === "$engagement") return engagementWords(v, false);
    if (k.startsWith("$")) return json({ [k]: v });
    return conditionWords(k, v, names);
  });
  return parts.join(" and ");
}

// --- triggers, steps, reentry ---------------------------------------------------------------

const group = (id: unknown, names: Names) => names.groups.get(String(id)) ?? text(id);

export function describeTrigger(trigger: unknown, names: Names): string {
  if (!isObject(trigger)) return json(trigger);
  let words: string;
  switch (trigger.type) {
    case "contact_created": words = "When a contact is created"; break;
    case "event": words = `When event ${text(trigger.name)} is received`; break;
    case "group_joined": words = `When a contact joins group ${group(trigger.groupId, names)}`; break;
    case "property_changed": words = `When property ${text(trigger.property)} changes`; break;
    case "email_opened":
    case "email_clicked": {
      const what = trigger.type === "email_opened" ? "opened" : "clicked";
      const of = typeof trigger.broadcastId === "string" && trigger.broadcastId ? ` of broadcast ${trigger.broadcastId}`
        : typeof trigger.template === "string" && trigger.template ? ` with template ${trigger.template}` : "";
      words = `When an email${of} is ${what}`;
      break;
    }
    default: words = `When ${json(trigger)}`;
  }
  if (isObject(trigger.filter) && Object.keys(trigger.filter).length) words += `, if ${describeFilter(trigger.filter, names)}`;
  return words;
}

function dayList(days: unknown): string {
  if (!Array.isArray(days) || !days.length || days.length === 7) return "";
  return ` on ${days.map((d) => DAY_NAMES[String(d)] ?? text(d)).join(", ")}`;
}

function eventWords(event: unknown): string {
  if (event === "email_opened") return "an open of an email this run sent";
  if (event === "email_clicked") return "a click in an email this run sent";
  return `event ${text(event)}`;
}

export function describeStep(step: unknown, names: Names): string {
  if (!isObject(step)) return json(step);
  switch (step.type) {
    case "wait": return `Wait ${durationWords(step.duration)}`;
    case "wait_until":
      return `Wait until ${text(step.time)}${dayList(step.days)} (${step.timezone === "workspace" ? "workspace's" : "contact's"} timezone)`;
    case "send": {
      const s = isObject(step.settings) ? step.settings : {};
      const off = [s.trackOpens === false ? "opens" : "", s.trackClicks === false ? "clicks" : ""].filter(Boolean);
      return `Send template ${text(step.template)}${off.length ? ` (${off.join(" and ")} not tracked)` : ""}`;
    }
    case "condition": return `If ${describeFilter(step.filter, names)}`;
    case "wait_for_event": return `Wait up to ${durationWords(step.timeout)} for ${eventWords(step.event)}`;
    case "update_contact": {
      const props = isObject(step.properties) ? Object.entries(step.properties) : [];
      return props.length ? `Set ${props.map(([k, v]) => (v === null ? `clear ${k}` : `${k} to ${text(v)}`)).join(", ")}` : "Update the contact";
    }
    case "add_to_group": return `Add to group ${group(step.groupId, names)}`;
    case "remove_from_group": return `Remove from group ${group(step.groupId, names)}`;
    case "exit": return "Exit the automation";
    default: return json(step);
  }
}

export function describeReentry(reentry: unknown): string {
  if (reentry === undefined || reentry === null || reentry === "once") return "Each contact enters once";
  if (reentry === "always") return "A contact enters again whenever it has no active run";
  if (isObject(reentry) && typeof reentry.after === "string") return `A contact enters again ${durationWords(reentry.after)} after its last entry (once no run is active)`;
  return json(reentry);
}

// --- the flow --------------------------------------------------------------------------------

const BRANCH_WORDS: Record<string, [string, string]> = {
  condition: ["Yes: then", "No: else"],
  wait_for_event: ["It came: then", "Timed out: else"],
};

function countsView(stepId: string, counts: StepCounts | undefined): Html {
  const cells = COUNT_KEYS.map((k) => html`<div><dt>${k}</dt><dd data-count="${k}">${counts ? counts[k] : 0}</dd></div>`);
  return html`<dl class="counts" data-stats="${stepId}" aria-label="Contacts in step ${stepId}">${cells}</dl>`;
}

function stepView(step: unknown, stats: Map<string, StepCounts>, names: Names): Html {
  const s = isObject(step) ? step : {};
  const id = typeof s.id === "string" ? s.id : "";
  const type = typeof s.type === "string" ? s.type : "";
  const branches = BRANCH_WORDS[type];
  let inner: Html | "" = "";
  if (branches) {
    const list = (key: "then" | "else", label: string) => {
      const steps = Array.isArray(s[key]) ? (s[key] as unknown[]) : [];
      const body = steps.length ? stepsView(steps, stats, names) : html`<p class="muted flow-pass">Nothing: continues below</p>`;
      return html`<div class="branch" data-branch="${key}"><p class="branch-label">${label}</p>${body}</div>`;
    };
    inner = html`<div class="branches">${list("then", branches[0])}${list("else", branches[1])}</div><p class="rejoin muted">Both branches continue below</p>`;
  }
  return html`<li class="flow-step" id="step-${id}" data-step="${id}" data-type="${type}">
<div class="box"><div class="box-head"><span class="step-type">${STEP_LABELS[type] ?? type}</span> <code class="muted">${id}</code></div>
<p class="step-words">${describeStep(step, names)}</p>${countsView(id, stats.get(id))}</div>${inner}</li>`;
}

function stepsView(steps: unknown[], stats: Map<string, StepCounts>, names: Names): Html {
  return html`<ol class="flow">${steps.map((s) => stepView(s, stats, names))}</ol>`;
}

/** The styles of the flow (the page embeds them once). */
export const FLOW_STYLE = html`<style>
ol.flow{list-style:none;margin:0;padding:0;display:grid;gap:1.5rem}
ol.flow>li{position:relative}
ol.flow>li+li::before{content:"↓";position:absolute;top:-1.45rem;left:1.25rem;color:#4a4a4a;font-weight:700}
.flow .box,.flow-start,.flow-end{background:#fff;border:2px solid #6b7280;border-radius:8px;padding:.5rem .75rem;max-width:34rem}
.flow-start,.flow-end{border-style:dashed}
.flow .step-type{font-weight:700}.flow .step-words{margin:.25rem 0}
.flow dl.counts{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:.25rem 0 0;font-size:.9rem}
.flow dl.counts div{display:flex;gap:.3rem}.flow dl.counts dt{color:#4a4a4a}.flow dl.counts dd{margin:0;font-weight:700;font-variant-numeric:tabular-nums}
.flow .branches{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1rem;margin:.75rem 0 0 1.25rem;padding-left:1rem;border-left:3px solid #d4d4d8}
.flow .branch-label{font-weight:600;margin:0 0 .5rem}
.flow .rejoin{margin:.5rem 0 0 1.25rem;font-size:.9rem}
</style>`;

/** The whole flow: the trigger, every step (branches side by side, then rejoining), the end. */
export function flowView(trigger: unknown, steps: unknown[], stats: Map<string, StepCounts>, names: Names): Html {
  return html`<div class="flow"><div class="flow-start"><span class="step-type">Trigger</span><p class="step-words">${describeTrigger(trigger, names)}</p></div>
<div aria-hidden="true" style="margin:.25rem 0 .25rem 1.25rem;font-weight:700;color:#4a4a4a">↓</div>
${steps.length ? stepsView(steps, stats, names) : html`<p class="muted">No steps.</p>`}
<div aria-hidden="true" style="margin:.25rem 0 .25rem 1.25rem;font-weight:700;color:#4a4a4a">↓</div>
<div class="flow-end"><span class="step-type">End</span><p class="step-words muted" style="margin:.25rem 0 0">The run is completed.</p></div></div>`;
}
