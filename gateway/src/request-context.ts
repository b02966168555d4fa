import { randomUUID } from "node:crypto";
import type { Interceptor } from "@connectrpc/connect";
import { requestContext, runWithRequestContext } from "../../services/kit/src/request-context.js";

/**
 * The request id of the HTTP request being served, for the service clients: every RPC
 * made while serving a request carries its `x-request-id`, whichever code makes the call.
 */
/** Runs `fn` (a fastify hook's `done`) with `requestId` as the current request id (kit's context: log lines carry it too). */
export const runWithRequestId = (requestId: string, fn: () => void) => runWithRequestContext(requestId, fn);

export const currentRequestId = () => requestContext()?.requestId;

/** Connect client interceptor: adds the current request id unless the call set one. */
export const requestIdInterceptor: Interceptor = (next) => (req) => {
  const requestId = currentRequestId();
  if (requestId && !req.header.has("x-request-id")) req.header.set("x-request-id", requestId);
  return next(req);
};

// Printable ASCII, no leading or trailing space, at most 128 characters.
const ACCEPTABLE_ID = /^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$/;

/** The caller's `x-request-id` when it is acceptable, else a new one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === "string" && ACCEPTABLE_ID.test(given) ? given : randomUUID();
}
