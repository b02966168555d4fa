/**
 * Parsing and validating an automation definition (DESIGN §9.6). Pure: the shape is checked
 * here; what only the accounts and audience units know (templates; groups, properties, filters) is listed by
 * `references` with the path of each, for the caller to check and report.
 *
 * Errors come one at a time, the first in document order: the trigger, then the steps (each
 * step's id and type, then its fields in the order they were written, branches depth first),
 * then reentry; a required field that is missing is reported after the fields present. The
 * message leaves the path out (the caller prints `path: message`).
 */
import {
  RUN_EMAIL_EVENTS,
  STEP_TYPES,
  TRIGGER_TYPES,
  type Definition,
  type DefinitionError,
  type FilterJson,
  type Reentry,
  type Step,
  type StepType,
  type Trigger,
  type TriggerType,
} from "./model.js";
import { checkDuration } from "@mailroom/kit/durations.js";
import { TIME_OF_DAY, WEEKDAYS } from "@mailroom/kit/time-zones.js";

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: DefinitionError };

/** Steps in an automation, all branches counted. */
export const MAX_STEPS = 100;
/** Branches inside branches: a step may sit inside at most this many. */
export const MAX_DEPTH = 10;
const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** As POST /v1/events names them (the audience unit's rule): dots separate non-empty parts. */
const EVENT_NAME = /^[A-Za-z0-9_\-:]+(?:\.[A-Za-z0-9_\-:]+)*$/;
const EVENT_NAME_MAX = 200;
/** Template names, group ids, property slugs, broadcast ids: generous, but bounded. */
const NAME_MAX = 200;
/** Contact fields a property_changed trigger may name besides custom property slugs. */
export const BUILT_IN_FIELDS: readonly string[] = ["firstName", "lastName", "email"];

class Invalid extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

function fail(path: string, message: string): never {
  throw new Invalid(path, message);
}

function attempt<T>(parse: () => T): Parsed<T> {
  try {
    return { ok: true, value: parse() };
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, error: { path: err.path, message: err.reason } };
    throw err;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "object") return "an object";
  if (value === undefined) return "undefined";
  return `${typeof value === "number" ? "the number" : typeof value === "boolean" ? "the boolean" : typeof value} ${String(value)}`;
}

const article = (word: string) => `${/^[aeiou]/.test(word) ? "an" : "a"} ${word}`;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function objectAt(value: unknown, path: string, what: string): Record<string, unknown> {
  if (!isObject(value)) fail(path, `must be ${what}, not ${describe(value)}`);
  return value;
}

function nameAt(value: unknown, path: string, what: string, max = NAME_MAX): string {
  if (typeof value !== "string") fail(path, `must be ${what} (a string), not ${describe(value)}`);
  if (!value.trim()) fail(path, `must be ${what}, not an empty string`);
  if (value.length > max) fail(path, `is longer than ${max} characters`);
  return value;
}

function eventNameAt(value: unknown, path: string): string {
  const name = nameAt(value, path, "an event name", EVENT_NAME_MAX);
  if (!EVENT_NAME.test(name))
    fail(path, `"${name}" is not an event name: letters, digits, "_", "-", ":" and "." between parts (e.g. "user.signup")`);
  return name;
}

function durationAt(value: unknown, path: string): string {
  if (typeof value !== "string") fail(path, `must be an ISO 8601 duration such as "P1D" (a string), not ${describe(value)}`);
  const checked = checkDuration(value);
  if ("error" in checked) fail(path, checked.error);
  return value;
}

function filterAt(value: unknown, path: string, emptyMeans: string): FilterJson {
  const filter = objectAt(value, path, "a filter object");
  if (!Object.keys(filter).length) fail(path, `an empty filter ${emptyMeans}`);
  return filter;
}

function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[], what: string): T {
  if (typeof value !== "string" || !allowed.includes(value as T))
    fail(path, `${describe(value)} is not ${what}: one of ${allowed.map((a) => `"${a}"`).join(", ")}`);
  return value as T;
}

/** How one field is read; `required`, when set, says what to give when it is missing. */
interface Field {
  required?: string;
  parse(value: unknown, path: string, ctx: StepContext): unknown;
}

/**
 * Reads `obj`'s fields (other than those in `skip`) in their written order against `fields`,
 * then reports the first required one missing; the result keeps the order of `fields`.
 */
function readFields(
  obj: Record<string, unknown>,
  path: string,
  fields: Record<string, Field>,
  skip: readonly string[],
  what: string,
  ctx: StepContext,
): Record<string, unknown> {
  const read: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    // A key set to undefined (an object built in code, not JSON) is a key left out.
    if (skip.includes(key) || value === undefined) continue;
    const field = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (!field) {
      const known = Object.keys(fields);
      fail(`${path}.${key}`, `unknown field "${key}" for ${what}${known.length ? ` (its fields: ${known.join(", ")})` : " (it has no other fields)"}`);
    }
    read[key] = field.parse(value, `${path}.${key}`, ctx);
  }
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(fields)) {
    if (Object.hasOwn(read, key)) out[key] = read[key];
    else if (field.required) fail(`${path}.${key}`, `required: ${field.required}`);
  }
  return out;
}

// ---- trigger --------------------------------------------------------------------------------

const triggerFilter: Field = { parse: (v, path) => filterAt(v, path, "matches every contact: leave filter out") };
const optionalName = (what: string): Field => ({ parse: (v, path) => nameAt(v, path, what) });

const TRIGGER_FIELDS: Record<TriggerType, Record<string, Field>> = {
  contact_created: { filter: triggerFilter },
  event: { name: { required: "the event's name, as sent to POST /v1/events", parse: eventNameAt }, filter: triggerFilter },
  group_joined: { groupId: { required: "the group's id or publicId", parse: (v, path) => nameAt(v, path, "a group id") }, filter: triggerFilter },
  property_changed: {
    property: { required: "a property's API slug, or firstName, lastName or email", parse: (v, path) => nameAt(v, path, "a property slug") },
    filter: triggerFilter,
  },
  email_opened: { broadcastId: optionalName("a broadcast id"), template: optionalName("a template name"), filter: triggerFilter },
  email_clicked: { broadcastId: optionalName("a broadcast id"), template: optionalName("a template name"), filter: triggerFilter },
};

function readTrigger(input: unknown): Trigger {
  if (input === undefined) fail("trigger", `required: an object such as { "type": "contact_created" }`);
  const obj = objectAt(input, "trigger", `an object such as { "type": "contact_created" }`);
  if (obj.type === undefined) fail("trigger.type", `required: one of ${TRIGGER_TYPES.join(", ")}`);
  const type = oneOf(obj.type, "trigger.type", TRIGGER_TYPES, "a trigger type");
  const fields = readFields(obj, "trigger", TRIGGER_FIELDS[type], ["type"], `${article(type)} trigger`, newContext());
  return { type, ...fields } as Trigger;
}

// ---- steps ----------------------------------------------------------------------------------

interface StepContext {
  /** Ids seen so far, with where. */
  ids: Map<string, string>;
  count: number;
  /** Branches around the step being read. */
  depth: number;
}

const newContext = (): StepContext => ({ ids: new Map(), count: 0, depth: 0 });

const branch =
  (name: "then" | "else"): Field["parse"] =>
  (value, path, ctx) => {
    if (ctx.depth >= MAX_DEPTH) fail(path, `branches nest more than ${MAX_DEPTH} deep`);
    ctx.depth++;
    try {
      return readStepList(value, path, ctx, name);
    } finally {
      ctx.depth--;
    }
  };

const thenBranch: Field = { required: "the steps of the branch (at least one)", parse: branch("then") };
const elseBranch: Field = { parse: branch("else") };

const STEP_FIELDS: Record<StepType, Record<string, Field>> = {
  wait: { duration: { required: 'how long, as an ISO 8601 duration such as "PT1H" or "P1D"', parse: durationAt } },
  wait_until: {
    time: {
      required: 'the time of day, "HH:MM"',
      parse: (v, path) => {
        if (typeof v !== "string" || !TIME_OF_DAY.test(v)) fail(path, `${describe(v)} is not a time of day "HH:MM" from 00:00 to 23:59`);
        return v;
      },
    },
    days: {
      parse: (v, path) => {
        if (!Array.isArray(v)) fail(path, `must be a list of days such as ["mon", "fri"], not ${describe(v)}`);
        if (!v.length) fail(path, "an empty list: name at least one day, or leave days out for every day");
        const seen = new Set<string>();
        return v.map((day, i) => {
          const d = oneOf(day, `${path}[${i}]`, WEEKDAYS, "a day");
          if (seen.has(d)) fail(`${path}[${i}]`, `"${d}" is listed twice`);
          seen.add(d);
          return d;
        });
      },
    },
    timezone: { parse: (v, path) => oneOf(v, path, ["contact", "workspace"] as const, "a timezone choice") },
  },
  send: {
    template: { required: "the name of a stored template", parse: (v, path) => nameAt(v, path, "a template name") },
    settings: {
      parse: (v, path, ctx) => {
        const flag: Field = {
          parse: (b, at) => {
            if (typeof b !== "boolean") fail(at, `must be true or false, not ${describe(b)}`);
            return b;
          },
        };
        return readFields(objectAt(v, path, "an object"), path, { trackOpens: flag, trackClicks: flag }, [], "send settings", ctx);
      },
    },
  },
  condition: {
    filter: { required: "a filter the contact must match to take then", parse: (v, path) => filterAt(v, path, "always takes then: give a condition") },
    then: thenBranch,
    else: elseBranch,
  },
  wait_for_event: {
    event: {
      required: `a custom event's name, or ${RUN_EMAIL_EVENTS.join(" or ")}`,
      parse: eventNameAt,
    },
    timeout: { required: 'how long to wait for the event before else, as an ISO 8601 duration such as "P2D"', parse: durationAt },
    then: thenBranch,
    else: elseBranch,
  },
  update_contact: {
    properties: {
      required: 'the properties to set, such as { "plan": "pro" }',
      parse: (v, path) => {
        const properties = objectAt(v, path, "an object of property slugs and values");
        if (!Object.keys(properties).length) fail(path, "an empty object: give at least one property to set");
        for (const [key, value] of Object.entries(properties)) {
          if (!key.trim()) fail(`${path}.${key}`, "a property slug may not be empty");
          if (key.length > NAME_MAX) fail(`${path}.${key.slice(0, 40)}…`, `a property slug is at most ${NAME_MAX} characters`);
          const scalar = value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
          if (!scalar) fail(`${path}.${key}`, `must be a string, number, boolean or null, not ${describe(value)}`);
        }
        return { ...properties };
      },
    },
  },
  add_to_group: { groupId: { required: "the group's id or publicId", parse: (v, path) => nameAt(v, path, "a group id") } },
  remove_from_group: { groupId: { required: "the group's id or publicId", parse: (v, path) => nameAt(v, path, "a group id") } },
  exit: {},
};

function readStepList(input: unknown, path: string, ctx: StepContext, kind: "steps" | "then" | "else"): Step[] {
  if (!Array.isArray(input)) fail(path, `must be a list of steps, not ${describe(input)}`);
  if (!input.length)
    fail(path, kind === "steps" ? "an empty automation: give at least one step" : kind === "then" ? "an empty branch: give at least one step" : "an empty branch: give at least one step, or leave else out");
  return input.map((step, i) => readStep(step, `${path}[${i}]`, ctx));
}

function readStep(input: unknown, path: string, ctx: StepContext): Step {
  const obj = objectAt(input, path, `a step, an object such as { "id": "welcome", "type": "send", "template": "welcome" }`);
  if (++ctx.count > MAX_STEPS) fail(path, `more than ${MAX_STEPS} steps in the automation (branches included)`);
  if (obj.id === undefined) fail(`${path}.id`, "required: a step id (letters, digits, _ and -, at most 64)");
  const id = obj.id;
  if (typeof id !== "string" || !STEP_ID.test(id)) fail(`${path}.id`, `${describe(id)} is not a step id: 1 to 64 letters, digits, _ and -`);
  const first = ctx.ids.get(id);
  if (first) fail(`${path}.id`, `"${id}" is already the id of ${first}: step ids are unique in the automation`);
  ctx.ids.set(id, path);
  if (obj.type === undefined) fail(`${path}.type`, `required: one of ${STEP_TYPES.join(", ")}`);
  const type = oneOf(obj.type, `${path}.type`, STEP_TYPES, "a step type");
  const fields = readFields(obj, path, STEP_FIELDS[type], ["id", "type"], `${article(type)} step`, ctx);
  return { id, type, ...fields } as Step;
}

// ---- reentry --------------------------------------------------------------------------------

function readReentry(input: unknown): Reentry {
  if (input === undefined || input === "once") return "once";
  if (input === "always") return "always";
  const shapes = `"once", "always" or { "after": "P30D" }`;
  if (!isObject(input)) fail("reentry", `${describe(input)} is not ${shapes}`);
  const fields = readFields(input, "reentry", { after: { required: `how long after the last entry, such as "P30D"`, parse: durationAt } }, [], "reentry", newContext());
  return { after: fields.after as string };
}

// ---- the API --------------------------------------------------------------------------------

/** The trigger object as sent (`trigger`). */
export function parseTrigger(input: unknown): Parsed<Trigger> {
  return attempt(() => readTrigger(input));
}

/** The steps array as sent (`steps`): every id unique in the automation, every field checked. */
export function parseSteps(input: unknown): Parsed<Step[]> {
  return attempt(() => {
    if (input === undefined) fail("steps", "required: a list of steps");
    return readStepList(input, "steps", newContext(), "steps");
  });
}

/** `reentry` as sent; undefined is "once". */
export function parseReentry(input: unknown): Parsed<Reentry> {
  return attempt(() => readReentry(input));
}

/** All three; the first error found, in the order trigger, steps, reentry. */
export function parseDefinition(input: { trigger: unknown; steps: unknown; reentry?: unknown }): Parsed<Definition> {
  const trigger = parseTrigger(input.trigger);
  if (!trigger.ok) return trigger;
  const steps = parseSteps(input.steps);
  if (!steps.ok) return steps;
  const reentry = parseReentry(input.reentry);
  if (!reentry.ok) return reentry;
  return { ok: true, value: { trigger: trigger.value, steps: steps.value, reentry: reentry.value } };
}

/** Something a definition names that the accounts or audience unit must confirm, with where it is named. */
export type Reference =
  | { kind: "template"; name: string; path: string }
  | { kind: "group"; id: string; path: string }
  | { kind: "property"; slug: string; path: string }
  | { kind: "filter"; filter: FilterJson; path: string }
  | { kind: "broadcast"; id: string; path: string };

/**
 * Every reference of the definition, trigger first, then steps depth first. A
 * property_changed trigger on a built-in field (firstName, lastName, email) names no property;
 * update_contact names one per key, built-in or not (the caller decides what it may set).
 */
export function references(def: Definition): Reference[] {
  const refs: Reference[] = [];
  const t = def.trigger;
  if (t.type === "group_joined") refs.push({ kind: "group", id: t.groupId, path: "trigger.groupId" });
  if (t.type === "property_changed" && !BUILT_IN_FIELDS.includes(t.property)) refs.push({ kind: "property", slug: t.property, path: "trigger.property" });
  // A template the trigger names that does not exist would match no open or click, ever.
  if ((t.type === "email_opened" || t.type === "email_clicked") && t.template) refs.push({ kind: "template", name: t.template, path: "trigger.template" });
  if ((t.type === "email_opened" || t.type === "email_clicked") && t.broadcastId) refs.push({ kind: "broadcast", id: t.broadcastId, path: "trigger.broadcastId" });
  if (t.filter) refs.push({ kind: "filter", filter: t.filter, path: "trigger.filter" });
  const walk = (steps: readonly Step[], path: string) =>
    steps.forEach((step, i) => {
      const at = `${path}[${i}]`;
      switch (step.type) {
        case "send":
          refs.push({ kind: "template", name: step.template, path: `${at}.template` });
          break;
        case "add_to_group":
        case "remove_from_group":
          refs.push({ kind: "group", id: step.groupId, path: `${at}.groupId` });
          break;
        case "update_contact":
          for (const slug of Object.keys(step.properties)) refs.push({ kind: "property", slug, path: `${at}.properties.${slug}` });
          break;
        case "condition":
          refs.push({ kind: "filter", filter: step.filter, path: `${at}.filter` });
          break;
      }
      if (step.type === "condition" || step.type === "wait_for_event") {
        walk(step.then, `${at}.then`);
        if (step.else) walk(step.else, `${at}.else`);
      }
    });
  walk(def.steps, "steps");
  return refs;
}
