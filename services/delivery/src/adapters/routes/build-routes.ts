/**
 * The routes of the settings as transports: each relay route its own connection pool, each
 * direct route a direct-to-MX transport (built by the caller), capture as before; a route's
 * `rate` through a Pacer over the shared buckets (the same KV buckets as MAILROOM_SMTP_RATE).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { redactUrl } from "@mailroom/kit/logger.js";
import type { CaptureStore } from "../capture.js";
import { CaptureTransport, SmtpPoolTransport } from "../smtp-transport.js";
import { Pacer, relayKeyOf } from "../../domain/pacer.js";
import type { MailTransport, PacingRepository } from "../../domain/ports.js";
import type { DeliverySettings, RouteSettings } from "../../settings.js";
import type { Route } from "./routed-transport.js";

export interface RouteFactories {
  /** Mail kept under the data dir (capture routes). */
  capture?: CaptureStore;
  /** A direct-to-MX transport (direct routes). */
  direct?: () => MailTransport;
  /** Shared buckets for routes with a `rate`. */
  pacing: PacingRepository;
}

export function buildRoutes(settings: DeliverySettings, f: RouteFactories): Route[] {
  return settings.routes.map((r) => ({
    name: r.name,
    kind: r.kind,
    target: targetOf(r),
    weight: r.weight,
    lanes: r.lanes,
    workspaces: r.workspaces,
    ...(r.provider ? { provider: r.provider } : {}),
    transport: transportOf(r, settings, f),
    ...(r.rate ? { gate: rateGate(new Pacer(f.pacing, { key: relayKeyOf(r.url ?? `${r.kind}:${r.name}`), rate: r.rate })) } : {}),
  }));
}

function targetOf(r: RouteSettings): string {
  if (r.kind === "relay") return redactUrl(r.url!);
  return r.kind === "direct" ? "MX" : "capture";
}

function transportOf(r: RouteSettings, s: DeliverySettings, f: RouteFactories): MailTransport {
  switch (r.kind) {
    case "relay":
      return new SmtpPoolTransport(
        {
          url: r.url!,
          poolSize: r.poolSize ?? s.poolSize,
          maxMessagesPerConnection: s.maxMessagesPerConnection,
          timeoutMs: s.smtpTimeoutMs,
          tlsRejectUnauthorized: s.tlsRejectUnauthorized,
          requireTls: s.requireTls,
          ignoreTls: s.ignoreTls,
          skeletonCacheEntries: s.skeletonCacheEntries,
        },
        redactUrl(r.url!),
      );
    case "direct":
      if (!f.direct) throw new Error(`route ${r.name}: direct delivery is not available in this build`);
      return f.direct();
    case "capture":
      if (!f.capture) throw new Error(`route ${r.name}: capture needs a capture store`);
      return new CaptureTransport(f.capture);
  }
}

/**
 * Waits until the route's shared bucket gives a token. The route is known only once chosen,
 * so unlike MAILROOM_SMTP_RATE (checked before the claim, the job requeued past 2 s) this
 * wait is spent in process; the job's heartbeats keep it meanwhile.
 */
export function rateGate(pacer: Pacer): () => Promise<void> {
  return async () => {
    // "" names no workspace: only the route's bucket applies (workspace rates were taken before).
    for (let wait = await pacer.acquire(""); wait > 0; wait = await pacer.acquire("")) await sleep(wait);
  };
}
