/**
 * Small helpers the audience pages share (groups, segments, topics, forms, the audience
 * picker): reading url-encoded form fields, answering HTML, the read-only check, and turning
 * a service's 4xx (or a form the /v1 route's schema refuses) into a message shown on the form again.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ZodType } from "zod";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import type { Flash } from "./layout.js";
import { sessionOf } from "./session.js";

type Form = Record<string, unknown>;

/** One field's text ("" when absent; the first when repeated). */
export const str = (body: unknown, name: string): string => {
  const v = (body as Form | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : "";
};

/** Every value of a repeated field (checkboxes). */
export const all = (body: unknown, name: string): string[] => {
  const v = (body as Form | undefined)?.[name];
  return v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)];
};

export const html = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page);

/** Refuses changes from an api_read session. */
export function editable(request: FastifyRequest): void {
  if (!sessionOf(request).canEdit) throw refusal({ code: "forbidden", status: 403, message: "This console session is read only (api_read key)." });
}

/** A 4xx becomes a message for the form shown again; anything else is rethrown (an error page). */
export function formError(err: unknown): Flash & { status: number } {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  return { kind: "error", message: body.message, status: body.statusCode };
}

/** A 404 page for an id that is not of the right shape (never sent to the service). */
export function notFoundUnless(ok: boolean, code: string, what: string): void {
  if (!ok) throw refusal({ code, status: 404, message: `No ${what} with this id exists in the workspace.` });
}

export const ID = {
  group: /^grp_[0-9a-z]{26}$/,
  segment: /^seg_[0-9a-z]{26}$/,
  topic: /^top_[0-9a-z]{26}$/,
  form: /^frm_[0-9a-z]{26}$/,
  contact: /^ctc_[0-9a-z]{26}$/,
};

/**
 * A console form checked with the schema its /v1 route uses: the parsed request, or a flash
 * with the first issue's message (and where it is), as a refusal from the service would be shown.
 */
export function parseWith<T>(schema: ZodType<T>, value: unknown): { ok: true; data: T } | { ok: false; flash: Flash & { status: number } } {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, data: result.data };
  const issue = result.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return { ok: false, flash: { kind: "error", message: `${where}${issue?.message ?? "invalid form"}`, status: 400 } };
}
