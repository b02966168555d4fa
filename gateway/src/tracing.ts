/**
 * The gateway's request span (DESIGN §9.10): one SERVER span per HTTP request, continuing the
 * caller's `traceparent` when it sends one, so the RPCs a route makes (the kit Connect client
 * opens a CLIENT span under the active context) are its children.
 *
 * Installed only while tracing is on: with it off the gateway registers no hook and no request
 * decorator at all, so the send path runs exactly as it did before traces existed.
 *
 * The span names the request by its route template (`POST /v1/emails`, `GET /v1/contacts/:id`)
 * and its id, never by its URL: a path may hold a recipient address and a query an API key.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SpanStatusCode } from "@opentelemetry/api";
import {
  REQUEST_ID_ATTRIBUTE,
  SpanKind,
  extractTraceContextFromRecord,
  startSpan,
  tracingOn,
  withContext,
} from "@mailroom/kit/tracing.js";

type StartedSpan = NonNullable<ReturnType<typeof startSpan>>;

declare module "fastify" {
  interface FastifyRequest {
    /** The request's span and its context (only decorated while tracing is on). */
    traceSpan?: StartedSpan | null;
  }
}

/** Probes and scrapes: a span every few seconds per prober would bury the traces worth reading. */
const UNTRACED_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);

/** Responses at or above this status are the server's failure (OpenTelemetry's HTTP server conventions). */
const SERVER_ERROR_STATUS = 500;

/**
 * Adds the request-span hooks to `app` when tracing is on; returns whether it did. Call it
 * before any scope registers: root hooks added later would not run for the scope's routes.
 */
export function installRequestSpans(app: FastifyInstance): boolean {
  if (!tracingOn()) return false;
  // Declared on the request's shape up front (Fastify's advice: no hidden-class change per request).
  app.decorateRequest("traceSpan", null);

  app.addHook("onRequest", (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route && UNTRACED_ROUTES.has(route)) return done();
    const started = startSpan(route ? `${request.method} ${route}` : request.method, {
      kind: SpanKind.SERVER,
      // A caller's traceparent continues its trace; without one the request starts a new trace.
      parent: extractTraceContextFromRecord(request.raw.headers),
      attributes: {
        "http.request.method": request.method,
        ...(route ? { "http.route": route } : {}),
        [REQUEST_ID_ATTRIBUTE]: request.id,
      },
    });
    request.traceSpan = started ?? null;
    // The rest of the request's hooks (auth's accounts call among them) run inside the span.
    withContext(started?.context, done);
  });

  // No preHandler re-entry is needed: Fastify 5 runs what follows body parsing in the request's
  // async context (content-type-parser.js binds it with an AsyncResource), so the handler and
  // its RPCs stay inside the span; tracing.test.ts sends the body late to hold it to that.

  app.addHook("onResponse", (request, reply, done) => {
    endRequestSpan(request, reply);
    done();
  });

  // The client went away before an answer: the span still ends (marked, not failed: the
  // server did nothing wrong), else it would never be exported.
  app.addHook("onRequestAbort", (request, done) => {
    const started = request.traceSpan;
    if (started) {
      request.traceSpan = null;
      started.span.setAttribute("error.type", "request_aborted");
      started.span.end();
    }
    done();
  });
  return true;
}

function endRequestSpan(request: FastifyRequest, reply: FastifyReply): void {
  const started = request.traceSpan;
  if (!started) return;
  // Cleared first: an abort that races the response must not end the span twice.
  request.traceSpan = null;
  const status = reply.statusCode;
  started.span.setAttribute("http.response.status_code", status);
  // A 4xx is the caller's mistake and leaves the status unset; a 5xx is ours.
  if (status >= SERVER_ERROR_STATUS) {
    started.span.setAttribute("error.type", String(status));
    started.span.setStatus({ code: SpanStatusCode.ERROR, message: String(status) });
  }
  started.span.end();
}
