/**
 * Domains pages. Placeholder until the page area is built: replace this file's contents,
 * keeping the export (index.ts registers it behind sign-in; paths are relative to /console).
 */
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { consolePage } from "./layout.js";
import { sessionOf } from "./session.js";

export function registerDomainPages(scope: FastifyInstance, _deps: ConsoleDeps): void {
  scope.get("/domains", async (request, reply) =>
    reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Domains",
      session: sessionOf(request),
      active: "domains",
      flash: request.consoleFlash,
      body: `<h1>Domains</h1><p class="muted">Coming soon.</p>`,
    })));
}
