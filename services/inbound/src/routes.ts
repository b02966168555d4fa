import type { ConnectRouter } from "@connectrpc/connect";
import type { Logger } from "@mailroom/kit";
import { appError } from "@mailroom/kit/errors.js";
import { InboundService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import type { ProviderWebhooks } from "./adapters/providers/index.js";
import type { InboundMail } from "./domain/inbound.js";

/**
 * Connect transport: InboundService.ReceiveProviderWebhook (DESIGN §9.7). The request is
 * authenticated and read by its provider's rules, then each report goes to the domain in
 * order; a failure there (the audience unit or NATS down) fails the call, so the provider retries.
 * So does a fresh report whose delivery's SENT event has not been consumed yet (503
 * `unknown_delivery`, as the SMTP listener's 451), once the batch's other reports are handled.
 */
export function inboundRoutes(webhooks: ProviderWebhooks, inbound: InboundMail) {
  return (router: ConnectRouter) => {
    router.service(InboundService, {
      async receiveProviderWebhook(req) {
        const headers = new Map(req.headers.map((h) => [h.name.toLowerCase(), h.value]));
        const read = await webhooks.read({ provider: req.provider, body: req.body, headers });
        let accepted = 0;
        let ignored = 0;
        const notYet: string[] = [];
        for (const report of read.reports) {
          const outcome = await inbound.providerReport(report);
          if (outcome.kind === "not-yet") notYet.push(outcome.deliveryId);
          else if (outcome.kind === "ignored") ignored++;
          else accepted++;
        }
        if (notYet.length) {
          throw appError({ code: NOT_RECORDED_YET, httpStatus: 503, message: `no sent delivery ${notYet.join(", ")} (yet); retry later` });
        }
        return { accepted, ignored, subscriptionConfirmed: read.subscriptionConfirmed };
      },
    });
  };
}

const NOT_RECORDED_YET = "unknown_delivery";

/**
 * The logger for inbound's Connect server: its "not recorded yet, retry" 503 is an expected
 * answer (many during a large broadcast whose reports beat their SENT events), so the
 * server's "rpc failed" error line becomes an info line; every other failure stays an error.
 */
export function rpcLogger(logger: Logger): Logger {
  const wrapped = Object.create(logger) as Logger;
  wrapped.error = ((obj: unknown, ...rest: unknown[]) =>
    (obj as { code?: unknown } | undefined)?.code === NOT_RECORDED_YET
      ? (logger.info as (...a: unknown[]) => void)(obj, "rpc answered: retry later (not recorded yet)")
      : (logger.error as (...a: unknown[]) => void)(obj, ...rest)) as Logger["error"];
  return wrapped;
}
