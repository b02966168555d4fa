import type { z } from "zod";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { invalid, refusal, type PublicErrorInit } from "@mailroom/http/errors.js";
import type { OperationDoc } from "../openapi.js";

/** A route module: registers its route(s) on the app (or the authenticated scope). */
export type RouteModule = (app: FastifyInstance, deps: GatewayDeps) => void;

type Output<S> = S extends z.ZodType ? z.output<S> : unknown;

export interface RouteSpec<P extends z.ZodObject | undefined, Q extends z.ZodObject | undefined, B extends z.ZodType | undefined, Body>
  extends Omit<OperationDoc, "params" | "query" | "body"> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  url: string;
  /** Path parameters: documented and parsed (a failure is a 400 `invalid_request`). */
  params?: P;
  /** Query string: documented and parsed (a failure is a 400 `invalid_request`). */
  query?: Q;
  /** JSON body: documented and parsed (a failure is a 400 `invalid_request`) unless `parseBody` reads it. */
  body?: B;
  /** Reads the body itself when its refusals say more than zod's first issue (emails); throws AppError. */
  parseBody?: (raw: unknown) => Body;
  /** See FastifyContextConfig.errorCodes. */
  errorCodes?: Record<string, string>;
  /**
   * Scope the route declared; default `api_user`, reading routes `api_read`. Who may call it is
   * its rule in ../roles.ts (every route needs one; the roles test fails otherwise).
   */
  scope?: string;
  /** Largest accepted body in bytes (413 beyond); default the server's DEFAULT_BODY_LIMIT_BYTES. */
  bodyLimit?: number;
  handler: (
    request: FastifyRequest,
    reply: FastifyReply,
    input: { params: Output<P>; query: Output<Q>; body: Body },
  ) => Promise<unknown>;
}

function parsed<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw refusal(invalid(result.error));
  return result.data;
}

/**
 * Registers a route that documents itself: the spec is both the OpenAPI operation and the
 * request parsing. Handlers throw (AppError, ConnectError); the error handler answers.
 */
export function defineRoute<
  P extends z.ZodObject | undefined = undefined,
  Q extends z.ZodObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  Body = Output<B>,
>(app: FastifyInstance, spec: RouteSpec<P, Q, B, Body>): void {
  const { method, url, params, query, body, parseBody, errorCodes, bodyLimit, scope, handler, ...doc } = spec;
  app.route({
    method,
    url,
    ...(bodyLimit ? { bodyLimit } : {}),
    config: { openapi: { ...doc, params, query, body }, ...(errorCodes ? { errorCodes } : {}), ...(scope ? { scope } : {}) },
    handler: async (request, reply) => {
      const input = {
        params: (params ? parsed(params, request.params) : request.params) as Output<P>,
        query: (query ? parsed(query, request.query ?? {}) : request.query) as Output<Q>,
        body: (parseBody ? parseBody(request.body) : body ? parsed(body, request.body) : request.body) as Body,
      };
      return handler(request, reply, input);
    },
  });
}

/**
 * Documents routes a module registers without defineRoute (tracking and unsubscribe links),
 * declared where the module is listed. The docs are attached as each route is added.
 */
export function withDocs(register: RouteModule, docs: Record<string, OperationDoc>): RouteModule {
  return (app, deps) => {
    app.register(async (scope) => {
      scope.addHook("onRoute", (options) => {
        const doc = docs[`${[options.method].flat().join(",")} ${options.url}`];
        if (doc) options.config = { ...options.config, openapi: doc };
      });
      register(scope, deps);
    });
  };
}
