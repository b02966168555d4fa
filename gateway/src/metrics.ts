import { z } from "zod";
import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { unauthorizedErrorSchema } from "@mailroom/http/errors.js";
import { defineRoute } from "./routes/route.js";
import { collectProcessMetrics, counter, histogram, metricsAuthorized, scrapeMetrics } from "@mailroom/kit/metrics.js";

const requests = counter("mailroom_http_requests_total", "Gateway requests by method, route pattern and status.", ["method", "route", "status"]);
const requestSeconds = histogram("mailroom_http_request_duration_seconds", "Gateway request latency by method and route pattern.", ["method", "route"]);

/**
 * Prometheus metrics on the gateway's public port: every request counted and timed by its
 * route pattern (`/v1/emails/:id`, never the URL, so ids never become label values), plus the
 * process metrics and whatever else this process's registry holds, served at GET /metrics.
 * With MAILROOM_METRICS_TOKEN set, a scrape needs `Authorization: Bearer <token>`.
 *
 * Installed on the root instance (not an encapsulated plugin) so its hook sees every route.
 */
export function installMetrics(app: FastifyInstance, deps: GatewayDeps): void {
  collectProcessMetrics();
  app.addHook("onResponse", async (request, reply) => {
    // No pattern: nothing matched (a 404) or the router refused the URL.
    const route = request.routeOptions.url ?? "(unmatched)";
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    requestSeconds.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  defineRoute(app, {
    method: "GET",
    url: "/metrics",
    operationId: "metrics",
    tags: ["Operations"],
    summary: "Prometheus metrics of the gateway process",
    description:
      "Requests by route pattern and status with latency histograms, process CPU, memory and event-loop lag (text exposition format). " +
      "Open unless `MAILROOM_METRICS_TOKEN` is set; then it needs `Authorization: Bearer <token>`.",
    responses: {
      200: { description: "The metrics.", content: { "text/plain": z.string() } },
      401: { description: "`MAILROOM_METRICS_TOKEN` is set and the request does not carry it: code `unauthorized`.", body: unauthorizedErrorSchema },
    },
    handler: async (request, reply) => {
      if (!metricsAuthorized(request.headers.authorization, deps.config.metricsToken)) {
        throw refusal({ code: "unauthorized", message: "Metrics need the bearer token (MAILROOM_METRICS_TOKEN)" });
      }
      const { contentType, body } = await scrapeMetrics();
      return reply.type(contentType).send(body);
    },
  });
}
