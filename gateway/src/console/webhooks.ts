/**
 * Webhooks pages. Placeholder until the page area is built: replace this file's contents,
 * keeping the export (index.ts registers it behind sign-in; paths are relative to /console).
 */
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { consolePage } from "./layout.js";
import { sessionOf } from "./session.js";

export function registerWebhookPages(scope: FastifyInstance, _deps: ConsoleDeps): void {
  scope.get("/webhooks", async (request, reply) =>
    reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Webhooks",
      session: sessionOf(request),
      active: "webhooks",
      flash: request.consoleFlash,
      body: `<h1>Webhooks</h1><p class="muted">Coming soon.</p>`,
    })));
}
