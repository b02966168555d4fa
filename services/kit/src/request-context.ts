import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The request id of the work being done — an RPC being served, a queued job being
 * handled — for code that never sees the request: kit's logger adds it to every line
 * (logger.ts) and queue publishers copy it into the jobs they publish, so one id
 * follows an email from the gateway through every service that touches it.
 */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with `requestId` as the current request id (an empty id: no context). */
export function runWithRequestContext<T>(requestId: string, fn: () => T): T {
  return requestId ? storage.run({ requestId }, fn) : fn();
}

/** The current request context, if the caller runs inside one. */
export function requestContext(): RequestContext | undefined {
  return storage.getStore();
}
