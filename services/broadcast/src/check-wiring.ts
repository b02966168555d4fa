import type { ConnectRouter } from "@connectrpc/connect";
import { NetworkPolicy } from "@mailroom/kit/network-policy.js";
import { systemClock } from "@mailroom/kit/clock.js";
import type { Directory, Logger } from "./domain/ports.js";
import type { Broadcasts } from "./domain/broadcasts.js";
import { PreSendCheck } from "./domain/check/pre-send-check.js";
import { HttpLinkProbe } from "./adapters/link-probe.js";
import { spamScorerFor } from "./adapters/spam-scorer.js";
import { checkRoutes } from "./check-routes.js";
import type { BroadcastSettings } from "./settings.js";

/** The pre-send check's parts, put together for the broadcast unit's server (main.ts). */
export function preSendCheck(deps: { broadcasts: Broadcasts; directory: Directory; settings: BroadcastSettings; logger: Logger }): (router: ConnectRouter) => void {
  const checks = new PreSendCheck({
    broadcasts: deps.broadcasts,
    directory: deps.directory,
    links: new HttpLinkProbe(new NetworkPolicy(deps.settings.allowNetworks)),
    spam: spamScorerFor(deps.settings.spamdUrl || undefined),
    clock: systemClock,
    logger: deps.logger,
  });
  return checkRoutes(checks);
}
