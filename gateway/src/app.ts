import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { z } from "zod";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { createAuthHook } from "./auth.js";
import { MemoryTokenBuckets } from "@mailroom/kit/token-bucket.js";
import { AuthFailureLimiter, createKeyRateLimitHook } from "./rate-limit.js";
import { requestIdOf } from "./request-context.js";
import { DEFAULT_BODY_LIMIT_BYTES, bodyFromRouterError, clientErrorResponse, handleError, refusal, sendError } from "@mailroom/http/errors.js";
import { collectOpenApi } from "./openapi.js";
import { installMetrics } from "./metrics.js";
import { apiRoutes, publicRoutes } from "./routes/index.js";
import { defineRoute, type RouteModule } from "./routes/route.js";
import { registerConsole } from "@mailroom/console";
import { lazyRequestLogger } from "./request-logger.js";
import { defaultErrorDocsUrl } from "@mailroom/http/settings.js";
import { installRoleRules } from "@mailroom/http/roles.js";
import { installRequestSpans } from "./tracing.js";
import { installLingeringClose } from "./lingering-close.js";

/**
 * Builds the public HTTP gateway: JSON in and out, auth, rate limits and error bodies.
 * It holds no data; every route calls a service over Connect.
 */
export async function buildGateway(
  deps: GatewayDeps,
  routes: { api: RouteModule[]; public: RouteModule[] } = { api: apiRoutes, public: publicRoutes },
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    // Per-request access lines cost more than the request at load; errors are still logged.
    // request.log's lines name the request as every other unit's lines do ("requestId").
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "requestId" }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: DEFAULT_BODY_LIMIT_BYTES,
    // Signed tracking tokens ride in path segments and exceed the default 100 characters.
    routerOptions: { maxParamLength: 4096 },
    // The caller's x-request-id when acceptable (printable, at most 128 characters), else a new one.
    genReqId: (req) => requestIdOf(req.headers["x-request-id"]),
    // Router-level errors (bad URL encoding, over-long path parameters) get the public body too.
    frameworkErrors: (err, request, reply) => sendError(reply.header("x-request-id", request.id), bodyFromRouterError(err)),
    // Requests Node's HTTP parser refuses (headers or URL over 16 KB, broken framing) get the public body too.
    clientErrorHandler: (err, socket) => {
      if (socket.writable && (err as NodeJS.ErrnoException).code !== "ECONNRESET") socket.end(clientErrorResponse(err, app.errorDocsBase));
      else socket.destroy(err);
    },
    return503OnClosing: true,
    forceCloseConnections: "idle",
  });

  // The API speaks JSON only; anything else is a 415 rather than a string body.
  app.removeContentTypeParser(["text/plain"]);
  // Bodiless POSTs (cancel) often still say application/json: an empty body is no body.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if ((body as string).trim() === "") return done(null, undefined);
    parseJson(request, body as string, (err, parsed) => {
      if (err) return done(err, undefined);
      // A NUL character is in no address, header, subject or property a sender means: refused
      // here, the same on every store (the stores keep one intact, PostgreSQL's escaped).
      const where = nulPath(parsed);
      if (where !== undefined) return done(Object.assign(new Error(`A string holds a NUL character (\\u0000) at ${where || "the body"}`), { statusCode: 400, code: "FST_ERR_CTP_NUL_CHARACTER" }), undefined);
      done(null, parsed);
    });
  });

  app.decorate("errorDocsBase", deps.errorDocsUrl ?? defaultErrorDocsUrl(deps.config.publicUrl));
  // First of all hooks, so the request's span covers auth and its RPCs; nothing at all when
  // tracing is off (tracing.ts).
  installRequestSpans(app);
  // Every answer names its request; the RPCs made while serving it carry the same id
  // (rpcOptions, required by the clients' type), and its log lines too (request.log binds requestId).
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  // An answer sent while the request body is still arriving (a 413 over the body limit, a 401
  // before the body is read) reaches the client: the rest of the body is read and discarded
  // (bounded) before the connection closes, never reset under an uploading client.
  installLingeringClose(app, deps.drainLimits);
  // A trace line per request at debug only (an access log at info costs more than the request).
  app.addHook("onResponse", (request, reply, done) => {
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, "request done");
    done();
  });

  // Every error (routes, hooks, parsers, plugins) becomes its public body in one place.
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(async (request) => {
    throw refusal({ code: "not_found", message: `Route ${request.method} ${request.url.split("?")[0]} not found` });
  });

  // Before any route: the OpenAPI document is generated from the routes as they register.
  collectOpenApi(app, deps.config.publicUrl);
  // Every route needs a rule in roles.ts: outside production a route without one stops the
  // gateway at start (test apps with routes of their own only get the warning).
  installRoleRules(app, { strict: !deps.config.production && routes.api === apiRoutes });
  installMetrics(app, deps);

  defineRoute(app, {
    method: "GET",
    url: "/healthz",
    operationId: "health",
    tags: ["Operations"],
    summary: "Liveness of the gateway",
    responses: { 200: { description: "The gateway is up.", body: z.strictObject({ ok: z.literal(true) }).meta({ id: "Health" }) } },
    handler: async () => ({ ok: true }),
  });

  // One failed-key limiter per process, shared by /v1 and the console's sign-in.
  const failures = deps.authFailuresPerMinute ? new AuthFailureLimiter(deps.authFailuresPerMinute) : undefined;
  await app.register(async (scope) => {
    // What this scope registers needs the key (the document says so from this mark).
    scope.addHook("onRoute", (options) => {
      options.config = { ...options.config, requiresApiKey: true };
    });
    // Auth runs first (onRequest, before the body is read), limited per client address in
    // failed attempts; the token bucket then counts the key's well-formed requests.
    scope.addHook("onRequest", createAuthHook(deps, failures));
    if (deps.rateLimitPerMinute > 0) {
      scope.addHook("preHandler", createKeyRateLimitHook({
        buckets: deps.rateLimitBuckets ?? new MemoryTokenBuckets(),
        perMinute: deps.rateLimitPerMinute,
        burst: deps.rateLimitBurst ?? deps.rateLimitPerMinute,
      }));
    }
    for (const register of routes.api) register(scope, deps);
  });

  for (const register of routes.public) register(app, deps);
  // The web console (/console): HTML pages in their own scope, not part of the API document.
  await registerConsole(app, deps, { failures });
  return app;
}

/** The path of the first key or string holding a NUL character ("" for the body itself), else undefined. */
export function nulPath(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return value.includes("\0") ? path : undefined;
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    const here = path ? `${path}.${key}` : key;
    if (key.includes("\0")) return here;
    const found = nulPath(inner, here);
    if (found !== undefined) return found;
  }
  return undefined;
}
