/**
 * Contacts pages. Placeholder until the page area is built: replace this file's contents,
 * keeping the export (index.ts registers it behind sign-in; paths are relative to /console).
 */
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { consolePage } from "./layout.js";
import { sessionOf } from "./session.js";

export function registerContactPages(scope: FastifyInstance, _deps: ConsoleDeps): void {
  scope.get("/contacts", async (request, reply) =>
    reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Contacts",
      session: sessionOf(request),
      active: "contacts",
      flash: request.consoleFlash,
      body: `<h1>Contacts</h1><p class="muted">Coming soon.</p>`,
    })));
}
