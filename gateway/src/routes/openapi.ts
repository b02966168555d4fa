import { readFileSync } from "node:fs";
import type { RouteModule } from "./index.js";
import { publicErrorBody, sendError } from "../errors.js";

/** The committed OpenAPI document of the public API (tested against the routes in openapi.test.ts). */
export const OPENAPI_PATH = new URL("../../../openapi/openapi.json", import.meta.url);

/**
 * GET /openapi.json: the document, with `servers` naming this gateway's public URL.
 * Read and serialized once at start; a deployment without the file answers 404 rather
 * than failing to start.
 */
export const registerOpenApi: RouteModule = (app, deps) => {
  let body: string | undefined;
  try {
    const doc = JSON.parse(readFileSync(OPENAPI_PATH, "utf8")) as Record<string, unknown>;
    doc.servers = [{ url: deps.config.publicUrl }];
    body = JSON.stringify(doc);
  } catch (err) {
    deps.logger.warn({ err }, "OpenAPI document not available");
  }

  app.get("/openapi.json", async (_request, reply) => {
    if (!body) return sendError(reply, publicErrorBody({ code: "not_found", message: "The OpenAPI document is not bundled with this deployment" }));
    return reply.type("application/json; charset=utf-8").header("cache-control", "public, max-age=300").send(body);
  });
};
