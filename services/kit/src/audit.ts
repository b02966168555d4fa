/**
 * The audit log's recording side (DESIGN §9.9): a Connect server interceptor that, after a
 * state-changing RPC succeeds, hands one entry to an AuditSink (the unit's publisher on the
 * AUDIT stream). What counts as a change, its action name and where its resource id is read
 * come from one table (audit-table.ts), reviewed method by method.
 *
 * Only calls that carry `x-mailroom-actor` are recorded: the gateway (API key or console
 * member) and the CLI set it on the RPCs they make; units calling each other do not (their
 * traffic follows from a change already recorded, or is the pipeline's own bookkeeping), so a
 * change is recorded once, at the hop a client reached.
 *
 * Recording never slows or fails the RPC: the sink is called without waiting, through a
 * bounded buffer that drops (and counts) entries when the publisher falls behind.
 */
import type { DescEnum, DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import type { ContextValues, Interceptor } from "@connectrpc/connect";
import type { Logger } from "./logger.js";
import { counter } from "./metrics.js";

/** The request header naming who asked for a change. */
export const ACTOR_HEADER = "x-mailroom-actor";
/** Optional: the actor's human-readable name (a member's email, a key's name), URI-encoded. */
export const ACTOR_LABEL_HEADER = "x-mailroom-actor-label";

export type AuditActorKind = "key" | "member" | "cli" | "system";

export interface AuditActor {
  kind: AuditActorKind;
  /** Key id, member id or the operating-system user of the CLI; empty for "system". */
  id: string;
  /** Human-readable: the member's email, the key's name, the CLI's user (may be empty). */
  label: string;
}

export interface AuditRecord {
  workspaceId: string;
  at: Date;
  actor: AuditActor;
  /** "<resource>.<verb>", e.g. "contact.update". */
  action: string;
  resource: { type: string; id: string };
  requestId: string;
  /** Changed fields (dotted paths) and their values, secrets and message content withheld. */
  summary: Record<string, string>;
}

/** Where recorded entries go. Must not throw; may return a promise (not awaited). */
export interface AuditSink {
  record(entry: AuditRecord): void | Promise<void>;
}

const ACTOR = /^(key|member|cli):([^\s]{1,200})$/;

/** The header value for an actor ("key:<id>", "member:<id>", "cli:<user>"). */
export function actorHeaderValue(kind: Exclude<AuditActorKind, "system">, id: string): string {
  return `${kind}:${id}`;
}

/** The header value of an actor's label (URI-encoded: a member's address may not be ASCII). */
export const actorLabelHeaderValue = (label: string): string => encodeURIComponent(label.slice(0, 200));

function decodeLabel(header: string | null | undefined): string {
  if (!header) return "";
  try {
    return decodeURIComponent(header).slice(0, 200);
  } catch {
    return "";
  }
}

/** The actor the headers name; undefined when absent or malformed (then nothing is recorded). */
export function parseActor(header: string | null | undefined, labelHeader?: string | null): AuditActor | undefined {
  const match = header ? ACTOR.exec(header.trim()) : null;
  if (!match) return undefined;
  const kind = match[1] as AuditActorKind;
  const id = match[2]!;
  return { kind, id, label: decodeLabel(labelHeader) || (kind === "cli" ? id : "") };
}

/** The actor a call's headers name, as "kind:id" (an email's sentBy); undefined when none. */
export function actorOfHeaders(headers: Headers): string | undefined {
  const actor = parseActor(headers.get(ACTOR_HEADER));
  return actor && actorHeaderValue(actor.kind as Exclude<AuditActorKind, "system">, actor.id);
}

// ---------------------------------------------------------------------------------------
// The table's row shapes (the rows are in audit-table.ts).

/** A field path into the request ("req.contactId") or the response ("res.contact.id"). */
export type FieldPath = `req.${string}` | `res.${string}`;

export interface AuditedRpc {
  action: string;
  resource: string;
  /** Where the resource id is read: the first path with a non-empty value wins. */
  id: FieldPath[];
  /** Where the workspace id is read (default req.workspaceId); a list field gives one entry per workspace. */
  workspace?: FieldPath;
  /** Only the changed field names, no values (sends: recipients and content are not the log's business). */
  namesOnly?: boolean;
  /**
   * For a call made before its caller is anyone (accepting an invitation, signing in): when
   * no actor header is sent, the member the answer names is the actor.
   */
  memberActor?: FieldPath;
  /** A call whose value here is true is not recorded (what it does is recorded elsewhere). */
  unless?: FieldPath;
}

/** A read: never recorded. */
export const READ = "read" as const;

/** A change deliberately left out of the log, with the reason. */
export interface NotAudited {
  notAudited: string;
}

export type AuditRule = AuditedRpc | typeof READ | NotAudited;

/** Table key: "<service type name>/<method name>". */
export type AuditTable = Record<string, AuditRule>;

export const isAudited = (rule: AuditRule | undefined): rule is AuditedRpc => typeof rule === "object" && "action" in rule;

// ---------------------------------------------------------------------------------------
// Summaries

/**
 * Field names whose values are or may be secrets: never copied, only named. Any "…key"
 * (apiKey, plainKey, a signing or private key; an idempotency key is no loss), "…token",
 * "…secret", "…password", "…pem", credentials, and a bootstrap file (json).
 */
const SECRET_FIELD = /(key|token|secret|password|passwd|pem|credentials?)$|^json$/i;
/** Message content and bulk data: named as changed, never copied. */
const CONTENT_FIELD = /^(html|text|subject|previewText|raw|body|content|attachments?|headers|stepsJson|textProperties)$/i;
/** Not part of what changed: the workspace (the entry's own column). */
const SKIPPED_FIELD = new Set(["workspaceId"]);

/** The value of a field named as changed but not copied (a secret, content): as team.proto's AuditEntry says. */
export const WITHHELD = "";
const MAX_VALUE_CHARS = 200;
const MAX_SUMMARY_FIELDS = 40;
const MAX_DEPTH = 4;

const clip = (value: string) => (value.length > MAX_VALUE_CHARS ? `${value.slice(0, MAX_VALUE_CHARS - 1)}…` : value);
/** A URL's user information is a credential (relay routes, webhook URLs): dropped. */
const withoutUserInfo = (value: string) => value.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1…@");

/** A JSON value with the values of secret-named keys, at any depth, withheld. */
function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) ? WITHHELD : withoutSecrets(v)]));
}

function scalarText(value: unknown): string {
  if (value instanceof Uint8Array) return `[${value.length} bytes]`;
  return clip(withoutUserInfo(String(value)));
}

/**
 * Enums whose public API names are lower case (the suppression list's `reason`); every other
 * enum's API name is its value's upper-case name.
 */
const LOWER_CASE_API_ENUMS = new Set(["mailroom.audience.v1.SuppressionReason"]);

/**
 * An enum value as the public API names it: without the prefix protobuf style shares between
 * the values (DELIVERY_METHOD_ASAP is "ASAP"), so an entry reads as the request that made it.
 */
function apiEnumName(desc: DescEnum, number: number): string {
  const value = desc.values.find((v) => v.number === number);
  if (!value) return String(number);
  // protobuf-es keeps the shared prefix lower case ("delivery_method_").
  const prefix = desc.sharedPrefix ?? "";
  const name = prefix && value.name.toLowerCase().startsWith(prefix.toLowerCase()) ? value.name.slice(prefix.length) : value.name;
  return LOWER_CASE_API_ENUMS.has(desc.typeName) ? name.toLowerCase() : name;
}

function walk(msg: ReflectMessage, prefix: string, out: Record<string, string>, namesOnly: boolean, depth: number): void {
  for (const field of msg.sortedFields) {
    if (Object.keys(out).length >= MAX_SUMMARY_FIELDS) return;
    if (!msg.isSet(field)) continue;
    if (depth === 0 && SKIPPED_FIELD.has(field.localName)) continue;
    const name = prefix + field.localName;
    const withheld = SECRET_FIELD.test(field.localName) || CONTENT_FIELD.test(field.localName) || (namesOnly && field.fieldKind !== "message");
    if (withheld) out[name] = WITHHELD;
    else summarizeField(msg, field, name, out, namesOnly, depth);
  }
}

function summarizeField(msg: ReflectMessage, field: DescField, name: string, out: Record<string, string>, namesOnly: boolean, depth: number): void {
  switch (field.fieldKind) {
    case "scalar":
      out[name] = scalarText(msg.get(field));
      return;
    case "enum":
      out[name] = apiEnumName(field.enum, msg.get(field) as number);
      return;
    case "list": {
      const list = msg.get(field);
      if (field.listKind === "message") out[name] = `[${list.size} items]`;
      else out[name] = clip([...list.values()].map((v) => scalarText(v)).join(", "));
      return;
    }
    case "map":
      out[name] = `[${msg.get(field).size} entries]`;
      return;
    case "message": {
      const sub = msg.get(field) as ReflectMessage;
      const typeName = field.message.typeName;
      if (typeName === "google.protobuf.Timestamp") {
        out[name] = namesOnly ? WITHHELD : String(toJson(field.message, sub.message as Message));
      } else if (typeName === "google.protobuf.Struct") {
        // Contact properties, group traits: each key is a changed field of its own.
        const json = toJson(field.message, sub.message as Message) as Record<string, unknown>;
        for (const [key, value] of Object.entries(json)) {
          if (Object.keys(out).length >= MAX_SUMMARY_FIELDS) break;
          out[`${name}.${key}`] = namesOnly || SECRET_FIELD.test(key) ? WITHHELD : clip(withoutUserInfo(typeof value === "string" ? value : JSON.stringify(withoutSecrets(value))));
        }
      } else if (depth >= MAX_DEPTH) {
        out[name] = WITHHELD;
      } else {
        walk(sub, `${name}.`, out, namesOnly, depth + 1);
      }
      return;
    }
  }
}

/**
 * The changed fields of a request: dotted field names with their values (clipped), secrets
 * and content replaced by placeholders, workspace id left out, at most 40 fields.
 */
export function summarizeChange(schema: DescMessage, message: Message, namesOnly = false): Record<string, string> {
  const out: Record<string, string> = {};
  walk(reflect(schema, message), "", out, namesOnly, 0);
  return out;
}

// ---------------------------------------------------------------------------------------
// Field paths

function valueAt(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** The value at `path` of the request or response (a list stays a list). */
export function readPath(path: FieldPath, req: unknown, res: unknown): unknown {
  return valueAt(path.startsWith("req.") ? req : res, path.slice(4));
}

const firstText = (paths: FieldPath[], req: unknown, res: unknown): string => {
  for (const path of paths) {
    const value = readPath(path, req, res);
    if (typeof value === "string" && value) return value;
  }
  return "";
};

// ---------------------------------------------------------------------------------------
// Recording

const auditEntries = counter("mailroom_audit_entries_total", "Audit entries of state-changing RPCs, by outcome (recorded, dropped when the buffer was full, failed to publish).", ["outcome"]);
// Labelled children made once: an entry is counted on every audited send, and prom-client
// checks the label set of each call made with one.
const entriesRecorded = auditEntries.labels({ outcome: "recorded" });
const entriesDropped = auditEntries.labels({ outcome: "dropped" });
const entriesFailed = auditEntries.labels({ outcome: "failed" });

export interface AuditPublisherPort {
  publish(entry: AuditRecord): Promise<unknown>;
}

/**
 * A sink over a publisher (pipeline's AuditPublisher) that never blocks its caller: at most `limit` entries are being published at once;
 * past that, entries are dropped, logged and counted (mailroom_audit_entries_total{outcome="dropped"}).
 */
export function bufferedAuditSink(publisher: AuditPublisherPort | Promise<AuditPublisherPort>, logger: Logger, limit = 1_000): AuditSink {
  const ready = Promise.resolve(publisher);
  // A publisher that never comes (NATS unreachable): each entry fails and is counted, no crash.
  ready.catch(() => {});
  let pending = 0;
  return {
    record(entry) {
      if (pending >= limit) {
        entriesDropped.inc();
        logger.warn({ action: entry.action, workspaceId: entry.workspaceId, requestId: entry.requestId }, "audit entry dropped: publisher behind");
        return;
      }
      pending++;
      void ready.then((p) => p.publish(entry)).then(
        () => entriesRecorded.inc(),
        (err: unknown) => {
          entriesFailed.inc();
          logger.error({ err, action: entry.action, workspaceId: entry.workspaceId, requestId: entry.requestId }, "audit entry not published");
        },
      ).finally(() => pending--);
    },
  };
}

export interface AuditInterceptorOptions {
  sink: AuditSink;
  table: AuditTable;
  /** The request id of the call (connect.ts passes its context value). */
  requestIdOf: (contextValues: ContextValues) => string;
  now?: () => Date;
}

/**
 * Records each successful, audited RPC that names an actor. Installed inside the error
 * mapping, so a failed call (an AppError or any throw) records nothing.
 */
export function auditInterceptor(opts: AuditInterceptorOptions): Interceptor {
  const now = opts.now ?? (() => new Date());
  return (next) => async (req) => {
    const res = await next(req);
    if (req.stream || res.stream) return res;
    const rule = opts.table[`${req.service.typeName}/${req.method.name}`];
    if (!isAudited(rule)) return res;
    if (rule.unless && readPath(rule.unless, req.message, res.message) === true) return res;
    const memberId = rule.memberActor ? readPath(rule.memberActor, req.message, res.message) : undefined;
    const actor = parseActor(req.header.get(ACTOR_HEADER), req.header.get(ACTOR_LABEL_HEADER)) ??
      (typeof memberId === "string" && memberId ? { kind: "member" as const, id: memberId, label: "" } : undefined);
    if (!actor) return res;
    try {
      const workspaces = readPath(rule.workspace ?? "req.workspaceId", req.message, res.message);
      const workspaceIds = (Array.isArray(workspaces) ? workspaces : [workspaces]).filter((w): w is string => typeof w === "string" && w !== "");
      const base = {
        at: now(),
        actor,
        action: rule.action,
        resource: { type: rule.resource, id: firstText(rule.id, req.message, res.message) },
        requestId: opts.requestIdOf(req.contextValues),
        summary: summarizeChange(req.method.input, req.message, rule.namesOnly ?? false),
      };
      for (const workspaceId of workspaceIds) void opts.sink.record({ ...base, workspaceId });
    } catch {
      // A summary that cannot be built must not fail a change that already happened.
      entriesFailed.inc();
    }
    return res;
  };
}
