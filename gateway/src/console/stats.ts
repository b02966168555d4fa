/**
 * Overview and stats: the console's home page. Placeholder until built.
 */
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { consolePage } from "./layout.js";
import { sessionOf } from "./session.js";

export function registerStatsPages(scope: FastifyInstance, _deps: ConsoleDeps): void {
  scope.get("/", async (request, reply) =>
    reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Overview",
      session: sessionOf(request),
      active: "overview",
      flash: request.consoleFlash,
      body: `<h1>Overview</h1><p class="muted">Coming soon.</p>`,
    })));
}
