import { z } from "zod";
import { defineRoute, type RouteModule } from "./route.js";

/**
 * GET /openapi.json: the document generated from the registered routes, with `servers`
 * naming this gateway's public URL. Built and serialized once, when the app is ready
 * (every route is registered by then).
 */
export const registerOpenApi: RouteModule = (app) => {
  let body = "";
  app.addHook("onReady", async () => {
    body = JSON.stringify(app.openapiDocument());
  });

  defineRoute(app, {
    method: "GET",
    url: "/openapi.json",
    operationId: "openapi",
    tags: ["Operations"],
    summary: "This document",
    description: "Generated from the gateway's routes; `servers` names this gateway's public URL (`MAILROOM_PUBLIC_URL`).",
    responses: {
      200: {
        description: "The OpenAPI 3.1 document.",
        body: z.looseObject({ openapi: z.string().regex(/^3\.1\./), info: z.looseObject({}), paths: z.looseObject({}) }),
      },
    },
    handler: async (_request, reply) =>
      reply.type("application/json; charset=utf-8").header("cache-control", "public, max-age=300").send(body),
  });
};
