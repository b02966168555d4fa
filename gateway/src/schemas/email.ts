import { z } from "zod";
import { EMAIL_ID } from "@mailroom/http/constants.js";
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  EmailInputSchema,
  EmailStatus,
  type EmailInput,
  type EmailRecord,
} from "@mailroom/proto/email/v1/email_pb.js";
import { MAX_ATTACHMENT_BYTES, MAX_HTML_BYTES, codedErrorFields, refusal, type PublicErrorInit } from "@mailroom/http/errors.js";
import { parseSendAt } from "./send-at.js";

export { parseSendAt };

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

// Variables, contact properties, event data: string keys to JSON values of bounded depth
// (deeper input would exceed protobuf's recursion limit between units: a 500, not a 400).
export const jsonObject = z
  .record(z.string(), z.unknown())
  .refine((v) => !nestsDeeperThan(v, MAX_JSON_DEPTH), { message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` });

const settings = z
  .object({
    trackClicks: z.boolean().nullish().meta({ description: "Rewrite links for click tracking. Default true." }),
    trackOpens: z.boolean().nullish().meta({ description: "Add an open pixel. Default true for templated emails, false for raw emails." }),
  })
  .strict()
  .nullish()
  .meta({ id: "EmailSettings" });

const recipient = { description: "A single recipient address." };

export const MAX_REPLY_TO = 5;

const replyTo = z
  .union([
    z.string(),
    z.array(z.string().min(1, "must not be empty")).max(MAX_REPLY_TO, `at most ${MAX_REPLY_TO} addresses`),
  ])
  .nullish()
  .meta({
    description: `Reply-To: one address, or a list of up to ${MAX_REPLY_TO} (\`addr\` or \`Name <addr>\`; duplicates, compared case-insensitively, are dropped). On a templated email it replaces the template's reply-to.`,
  });

/** Recipients of one email in all: to, cc and bcc (more: the email service's 400 `too_many_recipients`). */
export const MAX_RECIPIENTS = 50;
export const MAX_TAGS = 10;
/**
 * Hard caps on list lengths, far above the rules (which the email service checks and names with
 * their own codes): they only bound the work a hostile body can ask for before that check.
 */
const LIST_CAP = 1000;

const addressList = (what: string) =>
  z
    .union([z.string(), z.array(z.string().min(1, "must not be empty")).max(LIST_CAP, `at most ${LIST_CAP} addresses`)])
    .nullish()
    .meta({
      description: `${what}: one address or a list (\`addr\` or \`Name <addr>\`). With \`to\`, \`cc\` and \`bcc\` at most ${MAX_RECIPIENTS} recipients in all (more: 400 \`too_many_recipients\`); each is checked against the suppression list (a suppressed one is left out of the envelope) and counts toward the monthly limit. A malformed address: 400 \`invalid_payload\`.`,
    });

/** Header names the system sets or that change routing (DESIGN §9.5); the email service refuses them. */
export const REFUSED_HEADERS = [
  "From", "To", "Cc", "Bcc", "Subject", "Date", "Message-ID", "Return-Path", "Sender", "DKIM-Signature",
  "List-Unsubscribe", "List-Unsubscribe-Post", "Content-*", "MIME-Version", "Received",
];

const headers = z
  .record(z.string(), z.string())
  .nullish()
  .meta({
    id: "EmailHeaders",
    description: `Custom headers, \`{ "X-Name": "value" }\`, added to the message in the order given: at most 50, names RFC 5322 field names (printable ASCII without \`:\` or spaces, at most 76 characters), values at most 998 characters (else 400 \`invalid_request\`) without line breaks or control characters (400 \`header_injection\`). Refused with 400 \`header_not_allowed\` (case-insensitive): ${REFUSED_HEADERS.map((h) => `\`${h}\``).join(", ")}.`,
    examples: [{ "X-Entity-Ref-ID": "inv-1042" }],
  });

const attachment = z
  .strictObject({
    filename: z.string().min(1, "filename is required").meta({ description: "The file's name as the recipient sees it, at most 255 characters without line breaks; its extension gives the type when `contentType` is absent." }),
    content: z.string().meta({ description: "The file's bytes, base64 (standard or URL-safe alphabet; line breaks ignored). Not base64: 400 `invalid_payload` naming `attachments[i].content`." }),
    contentType: optionalString.meta({ description: "MIME type (`type/subtype`), e.g. `application/pdf`; default: from the filename's extension." }),
    contentId: optionalString.meta({ description: "Makes the attachment inline: the HTML shows it with `<img src=\"cid:<contentId>\">`. 1 to 250 characters without spaces, quotes, brackets or separators, unique in the email." }),
  })
  .meta({ id: "Attachment" });

const attachments = z
  .array(attachment)
  .max(LIST_CAP, `at most ${LIST_CAP} attachments`)
  .nullish()
  .meta({
    description: `Files sent with the email: at most ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MB (${MAX_ATTACHMENT_BYTES.toLocaleString("en")} bytes) decoded per email, else 400 \`attachments_too_large\` (the request body has room for their base64, 4/3 of that: 13,981,014 bytes, besides the 5 MB of HTML). Executable types (by extension or content type: vbs exe bin bat chm com cpl crt hlp hta inf ins isp jse lnk mdb pcd pif reg scr sct shs vbe vba wsf wsh wsl msc msi msp mst) are 400 \`attachment_type_not_allowed\` naming the file. The records list them without their bytes.`,
  });

const tags = z
  .array(z.strictObject({ name: z.string(), value: z.string() }).meta({ id: "Tag" }))
  .max(LIST_CAP, `at most ${LIST_CAP} tags`)
  .nullish()
  .meta({
    description: `At most ${MAX_TAGS} \`{ name, value }\` pairs, each name and value 1 to 256 letters, digits, \`_\` or \`-\` (else 400 \`invalid_tags\` naming the tag and the rule). They travel with the email into its record, events, webhooks (\`data.tags\`), the email log (\`GET /v1/emails?tag=name:value\`) and stats (\`GET /v1/stats/emails?tag=name:value\`).`,
    examples: [[{ name: "category", value: "invoice" }]],
  });

const common = {
  to: z.string().min(1, "to is required").meta(recipient),
  cc: addressList("Carbon-copy recipients"),
  bcc: addressList("Blind-copy recipients (they receive the message; no delivered copy carries a Bcc header)"),
  headers,
  attachments,
  tags,
  settings,
  groupBy: optionalString.meta({ description: "Identifier that groups analytics." }),
  sendAt: optionalString.meta({
    description: "Future delivery time: an ISO 8601 date-time with a time zone, extended or basic form (`2030-01-31T09:30:00Z`, `…:00.123+02:00`, `…T09:30+0200`, `…+02`, `20300131T093000Z`). In the past or now: sent now. More than 90 days ahead: 400 `send_at_out_of_range`; no zone or unparseable: 400 `invalid_send_at`.",
  }),
  replyTo,
  // "" would read as "no key" downstream and silently drop the duplicate protection asked for.
  idempotencyKey: z.string().min(1, "idempotencyKey must not be empty").nullish().meta({
    description: "Unique, non-empty key (per workspace, kept at least 24 h) that prevents duplicate sends: the same key with the same payload returns the first response again; with another payload 409 `idempotency_key_reused`; while the first request is in flight 409 `idempotency_request_in_progress`.",
  }),
};

export const rawEmailSchema = z
  .object({
    ...common,
    from: z.string().min(1, "from is required").meta({
      description: "Sender address or `Name <address>`; must be a verified address or on a verified domain (else 400 with `allowedEmails` and `allowedDomains`).",
    }),
    fromName: optionalString.meta({ description: "Sender display name." }),
    subject: z.string().min(1, "subject is required"),
    html: z.string().min(1, "html is required").meta({ description: "At most 5 MB (5,242,880 bytes of UTF-8); larger: 413 `payload_too_large`. Liquid (DESIGN §10.2), as are `subject`, `text` and `previewText`: `{{ … }}` and `{% … %}` render with `contactProperties` (bad Liquid: 400 `invalid_template` with `field`, `line` and `column`); content without Liquid markup is sent as given." }),
    text: optionalString.meta({ description: "Plain-text version; generated from the HTML when absent." }),
    previewText: optionalString.meta({ description: "Inbox preview text." }),
    contactProperties: jsonObject.nullish().meta({ description: "Additional contact data, stored on the recipient's contact; also the values of the email's Liquid (`{{ firstName | default: \"there\" }}`)." }),
  })
  .strict()
  .meta({
    id: "RawEmail",
    description: "A raw email: the caller supplies sender, subject and HTML. Optional fields also accept null, meaning not given.",
  });

export const templatedEmailSchema = z
  .object({
    ...common,
    template: z.string().min(1, "template is required").meta({
      description: "Name of a template of kind `template` created in the workspace (unknown: 400 `template_not_found`; a layout or snippet: 400 `invalid_template`).",
    }),
    variables: jsonObject.nullish().meta({ description: "Substitution values by variable name." }),
  })
  .strict()
  .meta({
    id: "TemplatedEmail",
    description: "An email rendered from a template stored in the workspace. `variables` may be omitted (missing values render as empty text). Optional fields also accept null, meaning not given.",
  });

/** The documented request of POST /v1/emails; parseEmail checks it (with the spec's messages). */
export const sendEmailRequestSchema = z.union([rawEmailSchema, templatedEmailSchema]).meta({
  id: "SendEmailRequest",
  description: "Either form. A payload carrying both `html` and `template`, or neither, is a 400 invalid payload.",
});

export type RawEmailJson = z.infer<typeof rawEmailSchema>;
export type TemplatedEmailJson = z.infer<typeof templatedEmailSchema>;

const FORMS =
  "The payload must match the raw form (from, to, subject, html) or the templated form (template, to, variables)";

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
    const decoded = decodeAttachments(p.attachments);
    if ("error" in decoded) return { error: decoded.error };
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
        replyTo: replyToList(p.replyTo),
        cc: addresses(p.cc),
        bcc: addresses(p.bcc),
        headers: Object.entries(p.headers ?? {}).map(([name, value]) => ({ name, value })),
        attachments: decoded.attachments,
        tags: (p.tags ?? []).map((t) => ({ name: t.name, value: t.value })),
      },
    };
  };

  if (hasHtml) {
    const parsed = rawEmailSchema.safeParse(body);
    if (!parsed.success) return invalidPayload(`Invalid raw email: ${describeIssues(parsed.error, body)}. ${FORMS}.`);
    const p = parsed.data;
    if (Buffer.byteLength(p.html, "utf8") > MAX_HTML_BYTES) {
      return { ok: false, error: { code: "payload_too_large", message: `html is larger than 5 MB (${MAX_HTML_BYTES} bytes of UTF-8)` } };
    }
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

/** cc or bcc as a list (one address or several; the email service checks each). */
const addresses = (value: string | string[] | null | undefined): string[] => [value ?? []].flat();

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64_URL = /^[A-Za-z0-9_-]*={0,2}$/;

/**
 * Attachment content from base64 to bytes, refused when it is not base64 (Buffer.from would
 * silently skip the characters it does not know and send a corrupt file). Line breaks and
 * spaces are ignored (wrapped base64, as `base64` and MIME write it).
 */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = /\s/.test(text) ? text.replace(/\s+/g, "") : text;
  if (!BASE64.test(compact) && !BASE64_URL.test(compact)) return undefined;
  const data = compact.replace(/=+$/, "");
  // A padded string is a whole number of quads; one stray character cannot be a byte.
  if ((compact.length !== data.length && compact.length % 4 !== 0) || data.length % 4 === 1) return undefined;
  return Buffer.from(data, compact.includes("-") || compact.includes("_") ? "base64url" : "base64");
}

type Decoded = { attachments: Array<{ filename: string; content: Uint8Array; contentType: string; contentId: string }> } | { error: PublicErrorInit };

function decodeAttachments(list: RawEmailJson["attachments"]): Decoded {
  const out: Extract<Decoded, { attachments: unknown }>["attachments"] = [];
  for (const [i, a] of (list ?? []).entries()) {
    const content = decodeBase64(a.content);
    if (!content) return { error: { code: "invalid_payload", message: `attachments[${i}].content is not valid base64 (file ${JSON.stringify(a.filename.slice(0, 100))})` } };
    out.push({ filename: a.filename, content, contentType: a.contentType ?? "", contentId: a.contentId ?? "" });
  }
  return { attachments: out };
}

/** The Reply-To list: one string or several, blanks and case-insensitive duplicates dropped. */
export function replyToList(value: string | string[] | null | undefined): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const address of [value ?? []].flat()) {
    const key = address.trim().toLowerCase();
    if (!key || seen.has(key)) continue;
    seen.add(key);
    out.push(address);
  }
  return out;
}

/** parseEmail for a route: the EmailInput, or the error body thrown as a refusal. */
export function parseEmailOrRefuse(body: unknown): EmailInput {
  const parsed = parseEmail(body);
  if (!parsed.ok) throw refusal(parsed.error);
  return parsed.input;
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
  return Object.assign(out, carriedJson(r));
}

/**
 * What else the email carries (DESIGN §9.5), each field only when it has something, like
 * groupBy: cc, bcc, headers (an object in the order given), tags and the attachments
 * without their bytes.
 */
export function carriedJson(r: EmailRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.cc.length) out.cc = r.cc;
  if (r.bcc.length) out.bcc = r.bcc;
  if (r.headers.length) out.headers = Object.fromEntries(r.headers.map((h) => [h.name, h.value]));
  if (r.tags.length) out.tags = r.tags.map((t) => ({ name: t.name, value: t.value }));
  if (r.suppressed.length) out.suppressed = r.suppressed.map((x) => ({ email: x.email, reason: x.reason }));
  if (r.attachments.length) {
    out.attachments = r.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      size: Number(a.size),
      ...(a.contentId ? { contentId: a.contentId } : {}),
    }));
  }
  return out;
}

/** A batch's successful item: id, messageId, status, to, type, template for templated ones, and what else it carries. */
export function batchItemJson(r: EmailRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: r.id, messageId: r.messageId, status: statusName(r.status), to: r.to, type: r.type };
  if (r.type === "templated") out.template = r.template;
  return Object.assign(out, carriedJson(r));
}

/** GET/cancel: the record plus when it is (or was) due, when it was created, and why it failed. */
export function emailDetailJson(r: EmailRecord): Record<string, unknown> {
  const out = emailRecordJson(r);
  if (r.sendAt) out.sendAt = new Date(Number(r.sendAt.seconds) * 1000 + Math.floor(r.sendAt.nanos / 1e6)).toISOString();
  if (r.createdAt) out.createdAt = new Date(Number(r.createdAt.seconds) * 1000 + Math.floor(r.createdAt.nanos / 1e6)).toISOString();
  if (r.statusReason) out.reason = r.statusReason;
  if (r.sentBy) out.sentBy = r.sentBy;
  return out;
}


// --- response records as schemas (for the generated OpenAPI document) ------------------------

const STATUSES = ["SCHEDULED", "SENT", "DELIVERED", "FAILED", "CANCELLED"] as const;

const recordFields = {
  id: z.string().regex(EMAIL_ID).meta({ description: "`trs_` followed by a lowercase ULID.", examples: ["trs_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
  messageId: z.string().min(1).meta({ description: "The Message-ID the email is sent with (provider message identifier)." }),
  status: z.enum(STATUSES).meta({
    description: "`SENT` once accepted for sending now, `SCHEDULED` when `sendAt` is in the future, `FAILED` when the recipient is suppressed; `DELIVERED`, `FAILED` and `CANCELLED` later, as GET /v1/emails/{id} shows. An idempotent replay returns the record as first answered.",
  }),
  to: z.string().meta({ description: "The recipient, as given." }),
};
const rawFields = { type: z.literal("raw"), from: z.string().meta({ description: "The sender, as given." }), subject: z.string() };
const templatedFields = { type: z.literal("templated"), template: z.string().meta({ description: "Name of the template the email was rendered from." }) };
const givenFields = {
  groupBy: z.string().min(1).optional().meta({ description: "Present only when the request carried one." }),
  cc: z.array(z.string()).optional().meta({ description: "Carbon-copy recipients as given; present only when there are some." }),
  bcc: z.array(z.string()).optional().meta({ description: "Blind-copy recipients as given; present only when there are some." }),
  headers: z.record(z.string(), z.string()).optional().meta({ description: "The custom headers as given; present only when there are some." }),
  tags: z.array(z.strictObject({ name: z.string(), value: z.string() })).optional().meta({ description: "The tags as given; present only when there are some." }),
  suppressed: z
    .array(z.strictObject({ email: z.string(), reason: z.string().meta({ description: "`unsubscribed`, `hard bounce`, `complaint` or `manually suppressed`." }) }))
    .optional()
    .meta({ description: "Cc and bcc addresses on the suppression list: left out of the envelope, never sent to (the Cc header still shows what was written); present only when there are some. A suppressed `to` fails the email instead." }),
  attachments: z
    .array(
      z.strictObject({
        filename: z.string(),
        contentType: z.string().meta({ description: "As given, or from the filename's extension." }),
        size: z.number().int().min(0).meta({ description: "Decoded size in bytes." }),
        contentId: z.string().optional().meta({ description: "Present for an inline attachment." }),
      }).meta({ id: "AttachmentInfo" }),
    )
    .optional()
    .meta({ description: "The attachments, in the order given, without their bytes; present only when there are some." }),
};
const { groupBy: _groupBy, ...carriedFields } = givenFields;
const detailFields = {
  sendAt: z.iso.datetime().optional().meta({ description: "When the email is (or was) due; present for scheduled emails." }),
  createdAt: z.iso.datetime().optional().meta({ description: "When the email was accepted." }),
  reason: z.string().optional().meta({ description: "Why the email failed (suppressed, bounced, …); present on FAILED emails that have one." }),
  sentBy: z.string().optional().meta({
    description: "Who sent it: `key:<api key id>`, `member:<member id>` (the console) or `cli:<user>`; absent for the system's own sends. Sends are not audit-log entries: this is their record.",
    examples: ["key:key_01jqz8k4m2x7v9c3n5b6t1w0ye"],
  }),
};

export const emailRecordSchema = z
  .union([
    z.strictObject({ ...recordFields, ...rawFields, ...givenFields }).meta({ id: "RawEmailRecord" }),
    z.strictObject({ ...recordFields, ...templatedFields, ...givenFields }).meta({ id: "TemplatedEmailRecord" }),
  ])
  .meta({ id: "EmailRecord", description: "The email record: `from` and `subject` for raw emails, `template` for templated ones; `groupBy`, `cc`, `bcc`, `headers`, `tags` and `attachments` only when given." });

export const emailDetailSchema = z
  .union([
    z.strictObject({ ...recordFields, ...rawFields, ...givenFields, ...detailFields }).meta({ id: "RawEmailDetail" }),
    z.strictObject({ ...recordFields, ...templatedFields, ...givenFields, ...detailFields }).meta({ id: "TemplatedEmailDetail" }),
  ])
  .meta({ id: "EmailDetail", description: "The email record with its current status, plus `sendAt`, `createdAt` and the failure `reason` when there is one." });

/** Bodies of single-email responses: { email: … }. */
export const emailEnvelope = (email: z.ZodType) => z.strictObject({ email });

export const MAX_BATCH = 50;

export const sendBatchRequestSchema = z
  .strictObject({
    emails: z.array(sendEmailRequestSchema).min(1).max(MAX_BATCH).meta({
      description: `1 to ${MAX_BATCH} emails; the forms may be mixed and each item has its own \`sendAt\`, \`groupBy\` and \`idempotencyKey\`. An item that is not a valid email does not refuse the request: it is reported in \`failed\`, the valid items are sent. Not an array, empty, over ${MAX_BATCH} or another top-level field: 400 \`batch_invalid\`, nothing sent.`,
    }),
  })
  .meta({ id: "SendBatchRequest" });

const batchSuccessItemSchema = z
  .union([
    z.strictObject({ ...recordFields, type: z.literal("raw"), ...carriedFields }),
    z.strictObject({ ...recordFields, type: templatedFields.type, template: templatedFields.template, ...carriedFields }),
  ])
  .meta({ id: "BatchSuccessItem", description: "A sent (or scheduled) batch item: id, messageId, status, to, type, for templated items template, and cc, bcc, headers, tags and attachments when it has some." });

const batchFailedItemSchema = z
  .looseObject({
    index: z.number().int().min(0).max(MAX_BATCH - 1),
    to: z.string().nullable(),
    ...codedErrorFields,
    code: z.string().optional(),
  })
  .meta({
    id: "BatchFailedItem",
    description: "A refused batch item: its position in the request, its `to` (null when it had none) and the error body the item would have got if sent alone (`code` shown except for the spec's invalid payload / invalid from bodies).",
  });

export const sendBatchResponseSchema = z
  .strictObject({
    emails: z.strictObject({
      successful: z.array(batchSuccessItemSchema),
      failed: z.array(batchFailedItemSchema).meta({ description: "Sorted by index." }),
    }),
  })
  .meta({ id: "SendBatchResponse" });
