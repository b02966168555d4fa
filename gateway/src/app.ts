import { randomUUID, createHash } from "node:crypto";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from "fastify";
import rateLimit from "@fastify/rate-limit";
import type { GatewayDeps } from "./deps.js";
import { createAuthHook } from "./auth.js";
import { publicErrorBody, sendError } from "./errors.js";
import { apiRoutes, publicRoutes, type RouteModule } from "./routes/index.js";

/** Requests larger than this are refused with 413 (broadcast HTML is capped at 500 KB). */
export const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

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
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    // Signed tracking tokens ride in path segments and exceed the default 100 characters.
    routerOptions: { maxParamLength: 4096 },
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    // Router-level errors (bad URL encoding, over-long path parameters) get the public body too.
    frameworkErrors: (err, _request, reply) => {
      const tooLong = (err as FastifyError).code === "FST_ERR_PARAM_TOO_LONG" || (err as FastifyError).statusCode === 414;
      return sendError(reply, publicErrorBody(tooLong
        ? { code: "uri_too_long", status: 414, message: "A path parameter is too long" }
        : { code: "invalid_request", message: `Malformed request URL: ${err.message}` }));
    },
    return503OnClosing: true,
    forceCloseConnections: "idle",
  });

  // The API speaks JSON only; anything else is a 415 rather than a string body.
  app.removeContentTypeParser(["text/plain"]);
  // Bodiless POSTs (cancel) often still say application/json: an empty body is no body.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) =>
    (body as string).trim() === "" ? done(null, undefined) : parseJson(request, body as string, done),
  );

  // Malformed JSON, wrong content type, oversize bodies: a clear 4xx, never a 500.
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = err.statusCode ?? 500;
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return sendError(reply, publicErrorBody({ code: "unsupported_media_type", message: "Content-Type must be application/json" }));
    }
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE" || status === 413) {
      return sendError(reply, publicErrorBody({ code: "payload_too_large", message: `Request body exceeds ${BODY_LIMIT_BYTES} bytes` }));
    }
    if (status === 429) {
      return sendError(reply, publicErrorBody({ code: "rate_limited", message: err.message }));
    }
    if (status >= 400 && status < 500) {
      const invalidJson = err instanceof SyntaxError || err.code?.startsWith("FST_ERR_CTP");
      return sendError(reply, publicErrorBody({
        code: invalidJson ? "invalid_json" : "invalid_request",
        message: invalidJson ? `Malformed JSON body: ${err.message}` : err.message,
      }));
    }
    request.log.error({ err }, "unhandled error");
    return sendError(reply, publicErrorBody({ code: "internal", message: "Internal error" }));
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, publicErrorBody({ code: "not_found", message: `Route ${request.method} ${request.url.split("?")[0]} not found` })),
  );

  app.get("/healthz", async () => ({ ok: true }));

  await app.register(async (scope) => {
    // Auth runs first (onRequest, before the body is read); the rate limit then counts per key.
    scope.addHook("onRequest", createAuthHook(deps));
    if (deps.rateLimitPerMinute > 0) {
      await scope.register(rateLimit, {
        hook: "preHandler",
        max: deps.rateLimitPerMinute,
        timeWindow: 60_000,
        enableDraftSpec: true,
        keyGenerator: (request) => request.auth?.keyId ?? createHash("sha256").update(request.ip).digest("hex"),
        errorResponseBuilder: (_request, context) => ({
          statusCode: 429,
          message: `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`,
        }),
      });
    }
    for (const register of routes.api) register(scope, deps);
  });

  for (const register of routes.public) register(app, deps);
  return app;
}
