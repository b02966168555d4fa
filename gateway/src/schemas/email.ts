import { createHash } from "node:crypto";
import { z } from "zod";
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  EmailInputSchema,
  EmailStatus,
  type EmailInput,
  type EmailRecord,
} from "../../../gen/mailroom/email/v1/email_pb.js";
import type { PublicErrorInit } from "../errors.js";

/**
 * The public JSON of transactional emails: the raw and templated request forms (spec,
 * "Resources"), their conversion to the internal EmailInput, and the response records.
 * Only the shape is checked here; every rule about content lives in the email service.
 */

// Optional fields tolerate an explicit null as "not given".
const optionalString = z.string().nullish();
const MAX_JSON_DEPTH = 16;

/** Whether a JSON value nests deeper than `limit` (iterative: hostile input cannot blow the stack). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

// Variables and contact properties: string keys to JSON values of bounded depth.
const jsonObject = z
  .record(z.string(), z.unknown())
  .refine((v) => !nestsDeeperThan(v, MAX_JSON_DEPTH), { message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` });

const settings = z
  .object({ trackClicks: z.boolean().nullish(), trackOpens: z.boolean().nullish() })
  .strict()
  .nullish();

const common = {
  to: z.string().min(1, "to is required"),
  settings,
  groupBy: optionalString,
  sendAt: optionalString,
  // "" would read as "no key" downstream and silently drop the duplicate protection asked for.
  idempotencyKey: z.string().min(1, "idempotencyKey must not be empty").nullish(),
};

export const rawEmailSchema = z
  .object({
    ...common,
    from: z.string().min(1, "from is required"),
    fromName: optionalString,
    subject: z.string().min(1, "subject is required"),
    html: z.string().min(1, "html is required"),
    text: optionalString,
    previewText: optionalString,
    replyTo: optionalString,
    contactProperties: jsonObject.nullish(),
  })
  .strict();

export const templatedEmailSchema = z
  .object({
    ...common,
    template: z.string().min(1, "template is required"),
    variables: jsonObject.nullish(),
  })
  .strict();

export type RawEmailJson = z.infer<typeof rawEmailSchema>;
export type TemplatedEmailJson = z.infer<typeof templatedEmailSchema>;

const FORMS =
  "The payload must match the raw form (from, to, subject, html) or the templated form (template, to, variables)";

// ISO 8601 date-time with a zone: 2030-01-31T09:30:00Z, …:00.123+02:00, …T09:30+0200.
const ISO_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** A sendAt string as a Date, or undefined when it is not an ISO 8601 timestamp with a zone. */
export function parseSendAt(value: string): Date | undefined {
  const m = ISO_WITH_ZONE.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || (s || 0) > 59) return undefined;
  if (new Date(Date.UTC(y, mo - 1, d)).getUTCDate() !== d) return undefined; // 2030-02-30
  const normalized = value.trim().replace(/([+-]\d{2})(\d{2})$/, "$1:$2");
  const date = new Date(normalized);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** JSON with object keys sorted at every level: equal payloads give equal text. */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) out[k] = sort((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

export const payloadHashOf = (item: unknown) => createHash("sha256").update(canonicalJson(item)).digest("hex");

export type ParsedEmail = { ok: true; input: EmailInput } | { ok: false; error: PublicErrorInit };

const invalidPayload = (message: string): ParsedEmail => ({ ok: false, error: { code: "invalid_payload", message } });

/** Whether `path` names a value present in `body` (zod v4 issues do not carry the input). */
function isPresent(body: unknown, path: PropertyKey[]): boolean {
  let v: unknown = body;
  for (const key of path) {
    if (!v || typeof v !== "object") return false;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v !== undefined;
}

function describeIssues(error: z.ZodError, body: unknown): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      if (i.code === "unrecognized_keys") return `unknown field${i.keys.length > 1 ? "s" : ""} ${i.keys.join(", ")}`;
      const path = i.path.join(".");
      if (i.code === "invalid_type" && !isPresent(body, i.path)) return `${path} is required`;
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join("; ");
}

/** One email of the public API (single send or batch item) -> EmailInput, or the error body to answer. */
export function parseEmail(body: unknown): ParsedEmail {
  if (!body || typeof body !== "object" || Array.isArray(body)) return invalidPayload(`${FORMS}; got ${Array.isArray(body) ? "an array" : typeof body === "object" ? "null" : typeof body}.`);
  const obj = body as Record<string, unknown>;
  const hasHtml = obj.html !== undefined && obj.html !== null;
  const hasTemplate = obj.template !== undefined && obj.template !== null;
  if (hasHtml === hasTemplate) {
    return invalidPayload(`${FORMS}; ${hasHtml ? "it may not carry both html and template" : "it has neither html nor template"}.`);
  }
  const common = (p: RawEmailJson | TemplatedEmailJson) => {
    let sendAt: Date | undefined;
    if (p.sendAt !== undefined && p.sendAt !== null) {
      sendAt = parseSendAt(p.sendAt);
      if (!sendAt) return { error: { code: "invalid_send_at", message: `sendAt must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:30:00Z; got ${JSON.stringify(p.sendAt.slice(0, 64))}` } };
    }
    return {
      init: {
        to: p.to,
        settings: { trackClicks: p.settings?.trackClicks ?? undefined, trackOpens: p.settings?.trackOpens ?? undefined },
        groupBy: p.groupBy ?? "",
        sendAt: sendAt ? timestampFromDate(sendAt) : undefined,
        idempotencyKey: p.idempotencyKey ?? "",
        payloadHash: payloadHashOf(body),
      },
    };
  };

  if (hasHtml) {
    const parsed = rawEmailSchema.safeParse(body);
    if (!parsed.success) return invalidPayload(`Invalid raw email: ${describeIssues(parsed.error, body)}. ${FORMS}.`);
    const p = parsed.data;
    const c = common(p);
    if (c.error) return { ok: false, error: c.error };
    return {
      ok: true,
      input: create(EmailInputSchema, {
        ...c.init,
        content: {
          case: "raw",
          value: {
            from: p.from,
            fromName: p.fromName ?? "",
            subject: p.subject,
            html: p.html,
            text: p.text ?? "",
            previewText: p.previewText ?? "",
            replyTo: p.replyTo ?? "",
            contactProperties: (p.contactProperties ?? undefined) as JsonObject | undefined,
          },
        },
      } satisfies MessageInitShape<typeof EmailInputSchema>),
    };
  }
  const parsed = templatedEmailSchema.safeParse(body);
  if (!parsed.success) return invalidPayload(`Invalid templated email: ${describeIssues(parsed.error, body)}. ${FORMS}.`);
  const p = parsed.data;
  const c = common(p);
  if (c.error) return { ok: false, error: c.error };
  return {
    ok: true,
    input: create(EmailInputSchema, {
      ...c.init,
      content: { case: "templated", value: { template: p.template, variables: (p.variables ?? {}) as JsonObject } },
    }),
  };
}

const STATUS_NAMES: Record<EmailStatus, string> = {
  [EmailStatus.UNSPECIFIED]: "SENT",
  [EmailStatus.SCHEDULED]: "SCHEDULED",
  [EmailStatus.SENT]: "SENT",
  [EmailStatus.DELIVERED]: "DELIVERED",
  [EmailStatus.FAILED]: "FAILED",
  [EmailStatus.CANCELLED]: "CANCELLED",
};

export const statusName = (s: EmailStatus) => STATUS_NAMES[s] ?? "SENT";

/**
 * The spec's Email record: id, messageId, status, to, type always; from and subject for
 * raw emails; template for templated ones; groupBy only when it was given.
 */
export function emailRecordJson(r: EmailRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: r.id, messageId: r.messageId, status: statusName(r.status), to: r.to, type: r.type };
  if (r.type === "raw") {
    out.from = r.from;
    out.subject = r.subject;
  } else {
    out.template = r.template;
  }
  if (r.groupBy) out.groupBy = r.groupBy;
  return out;
}

/** A batch's successful item: id, messageId, status, to, type and template for templated ones. */
export function batchItemJson(r: EmailRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: r.id, messageId: r.messageId, status: statusName(r.status), to: r.to, type: r.type };
  if (r.type === "templated") out.template = r.template;
  return out;
}

/** GET/cancel: the record plus when it is (or was) due, when it was created, and why it failed. */
export function emailDetailJson(r: EmailRecord): Record<string, unknown> {
  const out = emailRecordJson(r);
  if (r.sendAt) out.sendAt = new Date(Number(r.sendAt.seconds) * 1000 + Math.floor(r.sendAt.nanos / 1e6)).toISOString();
  if (r.createdAt) out.createdAt = new Date(Number(r.createdAt.seconds) * 1000 + Math.floor(r.createdAt.nanos / 1e6)).toISOString();
  if (r.statusReason) out.reason = r.statusReason;
  return out;
}

/** Email ids are trs_ + a lowercase ULID; anything else cannot exist. */
export const EMAIL_ID = /^trs_[0-9a-z]{26}$/;
