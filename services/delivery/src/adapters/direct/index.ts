/**
 * Direct-to-MX delivery (MAILROOM_DELIVERY_MODE=direct, DESIGN §9.7): what the delivery
 * unit's wiring needs — the settings and the transport.
 */
import net from "node:net";
import type { Logger } from "@mailroom/kit/logger.js";
import type { MailTransport } from "../../domain/ports.js";
import { MessageBytes } from "../message-bytes.js";
import { createDnsResolver, MxLookup } from "./mx.js";
import { MtaStsPolicies } from "./mta-sts.js";
import { DirectTransport } from "./transport.js";
import type { DirectSettings } from "./settings.js";

export { directVariablesSet, effectiveEhlo, loadDirectSettings, type DirectSettings, type DomainLimits } from "./settings.js";
export { DirectTransport } from "./transport.js";

export interface DirectTransportDependencies {
  logger: Logger;
  /** Broadcast skeletons kept (MAILROOM_DELIVERY_SKELETON_CACHE). */
  skeletonCacheEntries: number;
  /** Connection, greeting and reply timeout of one SMTP exchange (MAILROOM_SMTP_TIMEOUT_MS). */
  timeoutMs: number;
}

/** The transport delivering straight to recipients' MX hosts; its description is "direct". */
export function createDirectTransport(settings: DirectSettings, deps: DirectTransportDependencies): MailTransport & { close(): Promise<void> } {
  const dns = createDnsResolver(settings.dnsServers);
  const family = settings.localAddress ? (net.isIP(settings.localAddress) as 4 | 6) : undefined;
  return new DirectTransport(settings, {
    logger: deps.logger,
    mx: new MxLookup(dns, { family }),
    policies: new MtaStsPolicies(dns, deps.logger, { port: settings.mtaStsPort, ca: settings.extraCa }),
    bytes: new MessageBytes(deps.skeletonCacheEntries),
    timeoutMs: deps.timeoutMs,
  });
}
