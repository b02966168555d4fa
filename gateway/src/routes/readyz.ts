import { z } from "zod";
import { checkReadiness, processReadyChecks, type ReadyCheck } from "@mailroom/kit/health.js";
import type { Config } from "@mailroom/kit/config.js";
import { defineRoute, type RouteModule } from "./route.js";

/**
 * The services without which the gateway serves nothing useful: every key is checked by the
 * accounts unit, every send goes to the email service, and its recipients and the contacts
 * are the audience unit's. The others back some routes only (dev mail, broadcasts) and are
 * reported without making the gateway unready.
 */
const REQUIRED: Array<keyof Config["urls"]> = ["accounts", "audience", "email"];

/** A neighbour is reachable when its /healthz answers 200. */
function healthzOf(name: string, baseUrl: string): ReadyCheck {
  return {
    name,
    check: async () => {
      const res = await fetch(`${baseUrl.replace(/\/+$/, "")}/healthz`, { signal: AbortSignal.timeout(1_500) }).catch((err: Error) => {
        throw new Error(`unreachable (${err.cause instanceof Error ? err.cause.message : err.message})`);
      });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`/healthz answered ${res.status}`);
    },
  };
}

const report = z.record(z.string(), z.string().meta({ description: "`ok`, or why the check failed." }));
const readinessSchema = z
  .strictObject({
    statusCode: z.union([z.literal(200), z.literal(503)]).meta({ description: "The HTTP status, repeated (as in every error body)." }),
    ok: z.boolean(),
    checks: report.meta({ description: "The gateway's NATS connection and the services it needs." }),
    optional: report.meta({ description: "Services that back some routes only; they do not make the gateway unready." }),
  })
  .meta({ id: "Readiness" });

/**
 * GET /readyz: 200 when the gateway can serve (its NATS connection is up and the accounts,
 * audience and email services answer their /healthz; every other service URL is reported), else 503. Load balancers and compose healthchecks use it;
 * GET /healthz stays a plain liveness check.
 */
export const registerReadyz: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/readyz",
    operationId: "ready",
    tags: ["Operations"],
    summary: "Readiness of the gateway",
    description: "Checks the gateway's NATS connection and the `/healthz` of the accounts, audience and email services; reports the other services without depending on them.",
    responses: {
      200: { description: "Ready to serve.", body: readinessSchema },
      503: { description: "A dependency is unreachable; `checks` says which.", body: readinessSchema },
    },
    handler: async (_request, reply) => {
      const urls = deps.config.urls;
      const [required, optional] = await Promise.all([
        checkReadiness([...processReadyChecks(), ...REQUIRED.map((name) => healthzOf(name, urls[name]))]),
        checkReadiness(
          (Object.keys(urls) as Array<keyof Config["urls"]>).filter((name) => !REQUIRED.includes(name)).map((name) => healthzOf(name, urls[name])),
        ),
      ]);
      const statusCode = required.ok ? 200 : 503;
      return reply.code(statusCode).send({ statusCode, ok: required.ok, checks: required.checks, optional: optional.checks });
    },
  });
};
