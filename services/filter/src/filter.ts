/**
 * The one contact filter language (DESIGN §9.4): parsed and validated once here, compiled to
 * a store-port filter (MongoDB syntax, only operators every adapter has: services/store/src/
 * port.ts). Used by GET /v1/contacts?filter=, the contacts export, segments, broadcast
 * audiences and (later) automation conditions. Pure: no I/O; the caller passes the
 * workspace's property types and group ids, and resolves `$engagement` terms to contact ids
 * before compiling.
 *
 *   fields     email firstName lastName status source createdAt updatedAt groups
 *              properties.<apiSlug> (custom properties by type; built-in ones by name)
 *   operators  bare value (= $eq) $eq $ne $gt $gte $lt $lte $in $nin $exists
 *              $contains $startsWith $endsWith (case-insensitive; $contains on MULTI_SELECT
 *              matches an element); dates as ISO strings or { "$ago": "P30D" }
 *   logic      $and [..]  $or [..]  $not {..}  (several keys in one object: all must hold)
 *   engagement { "$engagement": { event, broadcastId?, since?, min? } }
 */

export type PropertyType = "string" | "number" | "boolean" | "date" | "select" | "multi_select";

export const ENGAGEMENT_EVENTS = ["delivered", "opened", "clicked", "bounced"] as const;
export type EngagementEvent = (typeof ENGAGEMENT_EVENTS)[number];

/** "Contacts with at least `min` such events (of that broadcast, since then)". */
export interface EngagementCondition {
  event: EngagementEvent;
  broadcastId?: string;
  since?: Date;
  /** At least 1. */
  min: number;
}

/**
 * How a field is stored and compared: `text` strings, `email` compared lowercased on
 * `emailLower`, `enum` one of `values`, `date` a stored Date, `date_iso` a date property
 * (stored as an ISO 8601 UTC string, so compared as one), `groups` the array of group ids.
 */
export type FieldKind = "text" | "email" | "enum" | "date" | "date_iso" | "number" | "boolean" | "select" | "multi_select" | "groups";

export interface FieldRef {
  /** As written in the filter ("email", "properties.plan"). */
  name: string;
  kind: FieldKind;
  /** The contact document's path. */
  path: string;
  values?: readonly string[];
}

export const FIELD_OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains", "$startsWith", "$endsWith"] as const;
export type FieldOperator = (typeof FIELD_OPERATORS)[number];

export type Scalar = string | number | boolean | Date;

export type FilterNode =
  | { type: "and"; nodes: FilterNode[] }
  | { type: "or"; nodes: FilterNode[] }
  | { type: "not"; node: FilterNode }
  | { type: "field"; field: FieldRef; op: FieldOperator; value: Scalar | Scalar[] }
  | { type: "engagement"; condition: EngagementCondition };

export interface ParseContext {
  /** The workspace's custom properties: API slug → type. */
  properties: Map<string, PropertyType>;
  /** A group's id from its id or publicId; undefined when the workspace has no such group. */
  groupIdOf(idOrPublicId: string): string | undefined;
  /** What `$ago` counts back from. */
  now: Date;
}

export interface FilterError {
  /** JSON path of the offending part, e.g. `filter.$and[1].properties.plan`. */
  path: string;
  /** The path and what is wrong with it. */
  message: string;
}

export type ParseResult = { ok: true; filter: FilterNode } | { ok: false; error: FilterError };

export const CONTACT_STATUSES = ["SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED", "OPT_IN_PENDING", "BANNED"] as const;
export const CONTACT_SOURCES = ["DASHBOARD", "PUBLIC_API", "CSV_IMPORT", "MAILCHIMP", "SENDGRID", "TRANSACTIONAL_EMAIL", "ZAPIER", "STRIPE"] as const;

/** Limits that keep one filter's work bounded. */
export const MAX_DEPTH = 12;
export const MAX_CONDITIONS = 200;
export const MAX_LIST = 1_000;
export const MAX_STRING = 1_000;
export const MAX_MIN = 100_000;
/** `$engagement` terms per filter: each is resolved to a set of contacts before the query runs. */
export const MAX_ENGAGEMENT = 10;

const field = (name: string, kind: FieldKind, path = name, values?: readonly string[]): FieldRef => ({ name, kind, path, ...(values ? { values } : {}) });

/** The contact document's built-in fields by filter name. */
const BUILT_IN_FIELDS: Record<string, FieldRef> = {
  email: field("email", "email", "emailLower"),
  firstName: field("firstName", "text"),
  lastName: field("lastName", "text"),
  status: field("status", "enum", "status", CONTACT_STATUSES),
  source: field("source", "enum", "source", CONTACT_SOURCES),
  createdAt: field("createdAt", "date"),
  updatedAt: field("updatedAt", "date"),
  groups: field("groups", "groups"),
};

/** Built-in properties (the public contact's `properties` holds them beside the custom ones): top-level document fields. */
const BUILT_IN_PROPERTIES: Record<string, FieldRef> = {
  "properties.email": field("properties.email", "email", "emailLower"),
  "properties.firstName": field("properties.firstName", "text", "firstName"),
  "properties.lastName": field("properties.lastName", "text", "lastName"),
  "properties.status": field("properties.status", "enum", "status", CONTACT_STATUSES),
  ...Object.fromEntries(
    ["avatarUrl", "city", "language", "phone", "birthday", "countryCode", "timezone"].map((slug) => [`properties.${slug}`, field(`properties.${slug}`, "text", slug)]),
  ),
};

const PROPERTY_KIND: Record<PropertyType, FieldKind> = {
  string: "text",
  number: "number",
  boolean: "boolean",
  date: "date_iso",
  select: "select",
  multi_select: "multi_select",
};

const EQUALITY: FieldOperator[] = ["$eq", "$ne", "$in", "$nin", "$exists"];
const ORDER: FieldOperator[] = ["$gt", "$gte", "$lt", "$lte"];
const TEXT: FieldOperator[] = ["$contains", "$startsWith", "$endsWith"];

/** The operators each kind of field takes. */
export const OPERATORS_BY_KIND: Record<FieldKind, readonly FieldOperator[]> = {
  text: [...EQUALITY, ...ORDER, ...TEXT],
  email: [...EQUALITY, ...ORDER, ...TEXT],
  select: [...EQUALITY, ...TEXT],
  enum: ["$eq", "$ne", "$in", "$nin"],
  date: [...EQUALITY, ...ORDER],
  date_iso: [...EQUALITY, ...ORDER],
  number: [...EQUALITY, ...ORDER],
  boolean: EQUALITY,
  multi_select: [...EQUALITY, "$contains"],
  groups: ["$eq", "$ne", "$in", "$nin"],
};

class Invalid extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown) => (JSON.stringify(v) ?? String(v)).slice(0, 80);

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const DURATION = /^P(?:(\d{1,6})Y)?(?:(\d{1,6})M)?(?:(\d{1,6})W)?(?:(\d{1,7})D)?(?:T(?:(\d{1,8})H)?(?:(\d{1,9})M)?(?:(\d{1,10}(?:\.\d{1,3})?)S)?)?$/;
const BROADCAST_ID = /^[A-Za-z0-9_-]{1,100}$/;
/** At most a hundred years back. */
const MAX_AGO_MS = 100 * 366 * 86_400_000;

/** An ISO 8601 duration before `now` (years and months by the calendar, UTC); undefined when not a valid one. */
export function dateAgo(duration: string, now: Date): Date | undefined {
  const m = DURATION.exec(duration);
  if (!m || duration === "P" || duration.endsWith("T")) return undefined;
  const [, y, mo, w, d, h, mi, s] = m;
  if ([y, mo, w, d, h, mi, s].every((part) => part === undefined)) return undefined;
  // Years and months by the calendar, the day clamped to the month's last (31 March - P1M = 28/29 February).
  const months = now.getUTCFullYear() * 12 + now.getUTCMonth() - Number(y ?? 0) * 12 - Number(mo ?? 0);
  const year = Math.floor(months / 12), month = months - year * 12;
  const day = Math.min(now.getUTCDate(), new Date(Date.UTC(year, month + 1, 0)).getUTCDate());
  const at = new Date(now.getTime());
  at.setUTCFullYear(year, month, day);
  const ms = ((Number(w ?? 0) * 7 + Number(d ?? 0)) * 86_400 + Number(h ?? 0) * 3_600 + Number(mi ?? 0) * 60 + Number(s ?? 0)) * 1_000;
  const result = new Date(at.getTime() - ms);
  if (Number.isNaN(result.getTime()) || now.getTime() - result.getTime() > MAX_AGO_MS) return undefined;
  return result;
}

function parseDate(value: unknown, path: string, now: Date): Date {
  if (isObject(value) && Object.keys(value).length === 1 && "$ago" in value) {
    const duration = value.$ago;
    if (typeof duration !== "string") throw new Invalid(`${path}.$ago`, `${show(duration)} is not an ISO 8601 duration such as "P30D"`);
    const at = dateAgo(duration, now);
    if (!at) throw new Invalid(`${path}.$ago`, `${show(duration)} is not an ISO 8601 duration such as "P30D" or "PT12H" (at most 100 years)`);
    return at;
  }
  if (typeof value !== "string" || !ISO_DATE.test(value.trim())) {
    throw new Invalid(path, `${show(value)} is not a date: use an ISO 8601 date or date-time, or { "$ago": "P30D" }`);
  }
  const text = value.trim();
  // A date-time without a zone is UTC (as a date alone is), never the server's local time.
  const m = ISO_DATE.exec(text)!;
  const at = new Date(text.length > 10 && !m[1] ? `${text.replace(" ", "T")}Z` : text);
  if (Number.isNaN(at.getTime())) throw new Invalid(path, `${show(value)} is not a valid date`);
  return at;
}

interface State {
  ctx: ParseContext;
  conditions: number;
  engagement: number;
}

function fieldOf(name: string, path: string, ctx: ParseContext): FieldRef {
  const builtIn = BUILT_IN_FIELDS[name] ?? BUILT_IN_PROPERTIES[name];
  if (builtIn) return builtIn;
  if (name.startsWith("properties.")) {
    const slug = name.slice("properties.".length);
    const type = ctx.properties.get(slug);
    if (!type) throw new Invalid(path, `unknown property "${slug}"`);
    return field(name, PROPERTY_KIND[type], `properties.${slug}`);
  }
  throw new Invalid(path, `unknown field "${name}" (fields: ${Object.keys(BUILT_IN_FIELDS).join(", ")}, properties.<slug>)`);
}

/** One value checked against the field's type and normalised (lowercased emails, Dates, group ids). */
function parseValue(f: FieldRef, op: FieldOperator, value: unknown, path: string, ctx: ParseContext): Scalar {
  const typeName: Record<FieldKind, string> = {
    text: "a string", email: "a string", enum: `one of ${f.values?.join(", ")}`, date: "a date", date_iso: "a date", number: "a number",
    boolean: "true or false", select: "a string", multi_select: "a string (one of its options)", groups: "a group id or publicId",
  };
  const mismatch = () => new Invalid(path, `${show(value)} does not match ${f.name} (${typeName[f.kind]})`);
  if (value === null) throw new Invalid(path, `null is not a value here; use { "$exists": false }`);
  switch (f.kind) {
    case "date":
    case "date_iso":
      return parseDate(value, path, ctx.now);
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) throw mismatch();
      return value;
    case "boolean":
      if (typeof value !== "boolean") throw mismatch();
      return value;
    case "enum": {
      const text = typeof value === "string" ? value.toUpperCase() : undefined;
      if (!text || !f.values!.includes(text)) throw mismatch();
      return text;
    }
    case "groups": {
      if (typeof value !== "string" || !value || value.length > 200) throw mismatch();
      const id = ctx.groupIdOf(value);
      if (!id) throw new Invalid(path, `unknown group ${show(value)}`);
      return id;
    }
    default: {
      if (typeof value !== "string") throw mismatch();
      if (value.length > MAX_STRING) throw new Invalid(path, `a value may have at most ${MAX_STRING} characters`);
      if (TEXT.includes(op) && value === "") throw new Invalid(path, `${op} needs a non-empty string`);
      return f.kind === "email" ? value.toLowerCase() : value;
    }
  }
}

function parseCondition(f: FieldRef, raw: unknown, path: string, state: State): FilterNode {
  const ctx = state.ctx;
  const one = (op: FieldOperator, value: unknown, at: string): FilterNode => {
    if (++state.conditions > MAX_CONDITIONS) throw new Invalid(at, `a filter may hold at most ${MAX_CONDITIONS} conditions`);
    if (!OPERATORS_BY_KIND[f.kind].includes(op)) {
      throw new Invalid(at, `operator ${op} does not apply to ${f.name} (it takes ${OPERATORS_BY_KIND[f.kind].join(", ")})`);
    }
    if (op === "$exists") {
      if (typeof value !== "boolean") throw new Invalid(at, `$exists takes true or false, not ${show(value)}`);
      return { type: "field", field: f, op, value };
    }
    if (op === "$in" || op === "$nin") {
      if (!Array.isArray(value)) throw new Invalid(at, `${op} takes a list of values`);
      if (value.length > MAX_LIST) throw new Invalid(at, `${op} takes at most ${MAX_LIST} values`);
      return { type: "field", field: f, op, value: value.map((v, i) => parseValue(f, op, v, `${at}[${i}]`, ctx)) };
    }
    return { type: "field", field: f, op, value: parseValue(f, op, value, at, ctx) };
  };
  const isDateValue = isObject(raw) && Object.keys(raw).length === 1 && "$ago" in raw;
  if (isObject(raw) && !isDateValue) {
    const entries = Object.entries(raw);
    if (!entries.length) throw new Invalid(path, "an empty condition; give a value or operators such as { \"$eq\": … }");
    const nodes = entries.map(([op, value]) => {
      const at = `${path}.${op}`;
      if (!(FIELD_OPERATORS as readonly string[]).includes(op)) {
        throw new Invalid(at, op.startsWith("$") ? `unknown operator "${op}" (operators: ${FIELD_OPERATORS.join(", ")})` : `a condition holds operators, not "${op}"`);
      }
      return one(op as FieldOperator, value, at);
    });
    return nodes.length === 1 ? nodes[0] : { type: "and", nodes };
  }
  if (Array.isArray(raw)) throw new Invalid(path, "a list is not a value; use { \"$in\": [...] }");
  return one("$eq", raw, path);
}

function parseEngagement(raw: unknown, path: string, state: State): FilterNode {
  if (!isObject(raw)) throw new Invalid(path, "$engagement takes { event, broadcastId?, since?, min? }");
  if (++state.conditions > MAX_CONDITIONS) throw new Invalid(path, `a filter may hold at most ${MAX_CONDITIONS} conditions`);
  if (++state.engagement > MAX_ENGAGEMENT) throw new Invalid(path, `a filter may hold at most ${MAX_ENGAGEMENT} $engagement terms`);
  for (const key of Object.keys(raw)) {
    if (!["event", "broadcastId", "since", "min"].includes(key)) throw new Invalid(`${path}.${key}`, `unknown $engagement property "${key}" (event, broadcastId, since, min)`);
  }
  const event = raw.event;
  if (typeof event !== "string" || !(ENGAGEMENT_EVENTS as readonly string[]).includes(event)) {
    throw new Invalid(`${path}.event`, `${show(event)} is not an engagement event (${ENGAGEMENT_EVENTS.join(", ")})`);
  }
  const condition: EngagementCondition = { event: event as EngagementEvent, min: 1 };
  if (raw.broadcastId !== undefined) {
    if (typeof raw.broadcastId !== "string" || !BROADCAST_ID.test(raw.broadcastId)) throw new Invalid(`${path}.broadcastId`, `${show(raw.broadcastId)} is not a broadcast id`);
    condition.broadcastId = raw.broadcastId;
  }
  if (raw.since !== undefined) condition.since = parseDate(raw.since, `${path}.since`, state.ctx.now);
  if (raw.min !== undefined) {
    if (typeof raw.min !== "number" || !Number.isInteger(raw.min) || raw.min < 1 || raw.min > MAX_MIN) {
      throw new Invalid(`${path}.min`, `${show(raw.min)} is not a whole number from 1 to ${MAX_MIN}`);
    }
    condition.min = raw.min;
  }
  return { type: "engagement", condition };
}

function parseNode(raw: unknown, path: string, depth: number, state: State): FilterNode {
  if (!isObject(raw)) throw new Invalid(path, `a filter is an object, not ${Array.isArray(raw) ? "a list" : show(raw)}`);
  if (depth > MAX_DEPTH) throw new Invalid(path, `filters nest at most ${MAX_DEPTH} deep`);
  const nodes: FilterNode[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const at = `${path}.${key}`;
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(value) || value.length === 0) throw new Invalid(at, `${key} takes a non-empty list of filters`);
      if (value.length > MAX_CONDITIONS) throw new Invalid(at, `${key} takes at most ${MAX_CONDITIONS} filters`);
      const children = value.map((child, i) => parseNode(child, `${at}[${i}]`, depth + 1, state));
      nodes.push({ type: key === "$and" ? "and" : "or", nodes: children });
    } else if (key === "$not") {
      nodes.push({ type: "not", node: parseNode(value, at, depth + 1, state) });
    } else if (key === "$engagement") {
      nodes.push(parseEngagement(value, at, state));
    } else if (key.startsWith("$")) {
      throw new Invalid(at, `unknown operator "${key}" (logic: $and, $or, $not; $engagement)`);
    } else {
      nodes.push(parseCondition(fieldOf(key, at, state.ctx), value, at, state));
    }
  }
  return nodes.length === 1 ? nodes[0] : { type: "and", nodes };
}

/**
 * Validates a filter (the parsed JSON) and normalises it: an unknown field, operator or
 * property, a value of the wrong type, an unknown group or a bad `$ago` is an error naming
 * its JSON path (`filter.…`). `{}` matches every contact.
 */
export function parseFilter(input: unknown, ctx: ParseContext): ParseResult {
  try {
    return { ok: true, filter: parseNode(input, "filter", 0, { ctx, conditions: 0, engagement: 0 }) };
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, error: { path: err.path, message: err.message } };
    throw err;
  }
}

/** The strings a filter names as groups (ids or publicIds), to look up before parsing. */
export function referencedGroups(input: unknown): string[] {
  const out = new Set<string>();
  const walk = (node: unknown, depth: number): void => {
    if (depth > MAX_DEPTH + 2 || out.size > MAX_LIST * 4) return;
    if (Array.isArray(node)) return node.forEach((n) => walk(n, depth + 1));
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === "groups") collect(value);
      else walk(value, depth + 1);
    }
  };
  const collect = (value: unknown): void => {
    if (typeof value === "string") out.add(value);
    else if (Array.isArray(value)) value.forEach((v) => typeof v === "string" && out.add(v));
    else if (isObject(value)) Object.values(value).forEach(collect);
  };
  walk(input, 0);
  return [...out];
}

/** A stable key for an engagement condition (what its resolved contact ids are kept under). */
export function engagementKey(c: EngagementCondition): string {
  return JSON.stringify([c.event, c.broadcastId ?? "", c.since?.toISOString() ?? "", c.min]);
}

/** The distinct `$engagement` conditions of a filter, to resolve before `toStoreFilter`. */
export function engagementConditions(node: FilterNode): EngagementCondition[] {
  const out = new Map<string, EngagementCondition>();
  const walk = (n: FilterNode): void => {
    if (n.type === "engagement") out.set(engagementKey(n.condition), n.condition);
    else if (n.type === "and" || n.type === "or") n.nodes.forEach(walk);
    else if (n.type === "not") walk(n.node);
  };
  walk(node);
  return [...out.values()];
}

export const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export interface CompileOptions {
  /**
   * The contact ids an engagement condition holds for (resolved beforehand, e.g. from
   * engagementConditions): a set, or a list sorted in JavaScript string order, each id once
   * (used as it is: not copied).
   */
  engagement(condition: EngagementCondition): ReadonlySet<string> | readonly string[];
}

/** Ids sorted (JavaScript string order), each once. A list is taken to be so already. */
function sortedIds(ids: ReadonlySet<string> | readonly string[]): readonly string[] {
  return Array.isArray(ids) ? (ids as readonly string[]) : [...ids].sort();
}

/** The union of sorted id lists, sorted, each id once (one merge pass), frozen. */
export function unionOfSorted(lists: readonly (readonly string[])[]): readonly string[] {
  if (lists.length === 1) return Object.isFrozen(lists[0]) ? lists[0] : Object.freeze([...lists[0]]);
  const out: string[] = [];
  const at = lists.map(() => 0);
  for (;;) {
    let best: string | undefined;
    for (let i = 0; i < lists.length; i++) if (at[i] < lists[i].length && (best === undefined || lists[i][at[i]] < best)) best = lists[i][at[i]];
    if (best === undefined) return Object.freeze(out);
    out.push(best);
    for (let i = 0; i < lists.length; i++) while (at[i] < lists[i].length && lists[i][at[i]] === best) at[i]++;
  }
}

/** An id list as the store filter's `$in`: frozen, so the store sorts and indexes it only once. */
const idsIn = (ids: readonly string[]): StoreFilter => ({ _id: { $in: Object.isFrozen(ids) ? ids : Object.freeze([...ids]) } });

export type StoreFilter = Record<string, unknown>;

/** A value as the document stores it: date properties are ISO strings, built-in dates Dates. */
function stored(f: FieldRef, value: Scalar): Scalar {
  return f.kind === "date_iso" && value instanceof Date ? value.toISOString() : value;
}

function compileField(n: Extract<FilterNode, { type: "field" }>): StoreFilter {
  const { field: f, op, value } = n;
  const path = f.path;
  switch (op) {
    case "$exists":
      return { [path]: { $exists: value } };
    case "$in":
    case "$nin":
      return { [path]: { [op]: (value as Scalar[]).map((v) => stored(f, v)) } };
    case "$contains":
    case "$startsWith":
    case "$endsWith": {
      const text = escapeRegex(String(value));
      const $regex = f.kind === "multi_select" ? `^${text}$` : op === "$startsWith" ? `^${text}` : op === "$endsWith" ? `${text}$` : text;
      return { [path]: { $regex, $options: "i" } };
    }
    default:
      return { [path]: { [op]: stored(f, value as Scalar) } };
  }
}

/**
 * The store-port filter of a parsed filter, over the contact documents (to be combined with
 * the workspace's own condition by the caller). Engagement terms become `_id` `$in` lists of
 * the ids `opts.engagement` gives; `$not` becomes `$nor`.
 */
export function toStoreFilter(node: FilterNode, opts: CompileOptions): StoreFilter {
  switch (node.type) {
    case "and":
      if (node.nodes.length === 0) return {};
      if (node.nodes.length === 1) return toStoreFilter(node.nodes[0], opts);
      return { $and: node.nodes.map((n) => toStoreFilter(n, opts)) };
    case "or": {
      if (node.nodes.length === 1) return toStoreFilter(node.nodes[0], opts);
      // Engagement terms of one $or are one merged id list ("opened any of the last 3"): an
      // `_id` `$in` the store plans as direct gets, where an $or of lists is a full scan.
      const terms = node.nodes.filter((n): n is Extract<FilterNode, { type: "engagement" }> => n.type === "engagement");
      if (terms.length < 2) return { $or: node.nodes.map((n) => toStoreFilter(n, opts)) };
      const merged = idsIn(unionOfSorted(terms.map((t) => sortedIds(opts.engagement(t.condition)))));
      const rest = node.nodes.filter((n) => n.type !== "engagement");
      return rest.length ? { $or: [merged, ...rest.map((n) => toStoreFilter(n, opts))] } : merged;
    }
    case "not":
      return { $nor: [toStoreFilter(node.node, opts)] };
    case "engagement":
      return idsIn(sortedIds(opts.engagement(node.condition)));
    case "field":
      return compileField(node);
  }
}
