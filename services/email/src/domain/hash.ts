import { createHash } from "node:crypto";
import type { EmailRequest } from "./model.js";
import { effectiveSettings } from "./validate.js";

/** JSON with object keys sorted at every level, so equal payloads give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function payloadHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

const nonEmpty = (o: Record<string, unknown> | undefined) => (o && Object.keys(o).length ? o : undefined);

/**
 * The idempotency digest of a request: its canonical form, so that requests that mean the
 * same thing hash alike whatever the caller's JSON looked like (key order, spacing, an
 * explicit null or an empty object for an absent field, a default spelled out, the same
 * instant in another zone). Only a real difference changes it.
 */
export function requestHash(req: EmailRequest): string {
  const content = req.content;
  return payloadHash({
    to: req.to,
    content:
      content.kind === "raw"
        ? { ...content, contactProperties: nonEmpty(content.contactProperties) }
        : content.kind === "forwarded"
          ? // The received email it forwards names the message: a retried forward (its trace header
            // and SRS stamp written again) is the same request.
            { kind: content.kind, receivedId: content.receivedId }
          : { ...content, variables: nonEmpty(content.variables) },
    settings: effectiveSettings(req),
    groupBy: req.groupBy || undefined,
    sendAt: req.sendAt,
    replyTo: req.replyTo?.length ? req.replyTo : undefined,
    cc: req.cc?.length ? req.cc : undefined,
    bcc: req.bcc?.length ? req.bcc : undefined,
    headers: req.headers?.length ? req.headers : undefined,
    // Each file by its digest: the same bytes hash alike without copying megabytes into JSON.
    attachments: req.attachments?.length
      ? req.attachments.map((a) => ({
          filename: a.filename,
          contentType: a.contentType || undefined,
          contentId: a.contentId || undefined,
          sha256: createHash("sha256").update(a.content).digest("hex"),
        }))
      : undefined,
    tags: req.tags?.length ? req.tags : undefined,
    // An automation's send and a public API request with the same key are different requests.
    automation: req.automation || undefined,
    idempotencyKey: req.idempotencyKey,
  });
}
