/**
 * What the domain pages (sending domains, inbound domains) share: their forms post, then come
 * back with a flash, and an API key that may only read changes nothing.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { seeOther, sessionOf, setFlash } from "../session.js";

/** Runs a form's action; a refusal the user can fix comes back as a flash on `back`, not an error page. */
export async function formAction(reply: FastifyReply, back: string, action: () => Promise<string>): Promise<FastifyReply> {
  try {
    return seeOther(reply, await action());
  } catch (err) {
    const body = bodyFromError(err);
    if (body.statusCode >= 500 || body.statusCode === 404) throw err;
    setFlash(reply, { kind: "error", message: body.message });
    return seeOther(reply, back);
  }
}

/** Refuses a change from a session that may only view the console. */
export function requireEdit(request: FastifyRequest): void {
  if (!sessionOf(request).canEdit) throw refusal({ code: "forbidden", status: 403, message: "This API key can only view the console." });
}
