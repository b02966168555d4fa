import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { API_KEY_RESPONSES } from "./openapi.js";
import { defineRoute } from "./routes/route.js";

const requestIdHeader = { "x-request-id": { $ref: "#/components/headers/XRequestId" } };

describe("the generated OpenAPI document", () => {
  it("documents a new route from its declaration alone, and leaves out a route that declares nothing", async () => {
    const widget = z.strictObject({ id: z.string(), size: z.number().int() }).meta({ id: "Widget", description: "A widget." });
    const app = await buildGateway(
      {
        config: loadConfig({}),
        logger: createLogger("gateway-openapi-generation-test", "silent"),
        clients: {} as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 1000,
      },
      {
        api: [
          (scope) => defineRoute(scope, {
            method: "PUT",
            url: "/v1/widgets/:id",
            operationId: "replaceWidget",
            tags: ["Operations"],
            summary: "Replace a widget",
            params: z.object({ id: z.string().meta({ description: "The widget." }) }),
            query: z.object({ dryRun: z.enum(["true", "false"]).optional() }),
            body: z.strictObject({ size: z.number().int() }),
            responses: { 200: { description: "The widget.", body: widget }, 404: { description: "No such widget.", body: apiErrorSchema }, ...API_KEY_RESPONSES },
            handler: async (_request, _reply, { params, body }) => ({ id: params.id, size: body.size }),
          }),
          (scope) => scope.get("/v1/undocumented", async () => ({})),
        ],
        public: [
          (app) => defineRoute(app, {
            method: "POST",
            url: "/echo",
            operationId: "echo",
            tags: ["Operations"],
            summary: "Echo",
            body: z.strictObject({ size: z.number().int() }),
            responses: { 200: { description: "The body.", body: z.strictObject({ size: z.number().int() }) } },
            handler: async (_request, _reply, { body }) => body,
          }),
        ],
      },
    );
    await app.ready();
    const doc = app.openapiDocument();
    expect(doc.paths["/v1/undocumented"]).toBeUndefined();
    expect(doc.paths["/v1/widgets/{id}"].put).toEqual({
      operationId: "replaceWidget",
      tags: ["Operations"],
      summary: "Replace a widget",
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string" }, description: "The widget." },
        { name: "dryRun", in: "query", schema: { type: "string", enum: ["true", "false"] } },
      ],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: { type: "object", properties: { size: { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 } }, required: ["size"], additionalProperties: false },
          },
        },
      },
      responses: {
        200: { description: "The widget.", headers: requestIdHeader, content: { "application/json": { schema: { $ref: "#/components/schemas/Widget" } } } },
        404: { description: "No such widget.", headers: requestIdHeader, content: { "application/json": { schema: { $ref: "#/components/schemas/ApiError" } } } },
        401: { $ref: "#/components/responses/Unauthorized" },
        429: { $ref: "#/components/responses/RateLimited" },
        503: { $ref: "#/components/responses/ServiceUnavailable" },
      },
    });
    expect(doc.components.headers.XRequestId).toMatchObject({ required: true, schema: { type: "string", maxLength: 128 } });
    expect(doc.components.schemas.Widget).toMatchObject({ description: "A widget.", required: ["id", "size"] });
    // Outside the authenticated scope an operation needs no key.
    expect(doc.paths["/healthz"].get).toMatchObject({ security: [] });
    expect(doc.paths["/echo"].post).toMatchObject({ security: [] });

    // The declaration also parses the request: a bad body is the usual 400 invalid_request.
    expect((await app.inject({ method: "POST", url: "/echo", payload: { size: 2 } })).json()).toEqual({ size: 2 });
    const refused = await app.inject({ method: "POST", url: "/echo", payload: { size: 1.5 } });
    expect(refused.json()).toEqual({ statusCode: 400, error: "Bad Request", code: "invalid_request", message: expect.stringMatching(/^size: /), docsUrl: expect.any(String) });
    await app.close();
  });
});
