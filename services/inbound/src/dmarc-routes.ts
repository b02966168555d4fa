import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { badRequest } from "@mailroom/kit/errors.js";
import type { GetDmarcSummaryRequest, GetDmarcSummaryResponseSchema } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { ruaFor } from "./domain/dmarc/mailbox.js";
import type { DmarcReportStore } from "./domain/dmarc/ports.js";
import { summarise } from "./domain/dmarc/summary.js";
import type { Clock } from "./domain/ports.js";

/** The summary's window when the request names no `since`. */
export const DEFAULT_DMARC_WINDOW_DAYS = 30;

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

export interface DmarcSummaryDeps {
  reports: DmarcReportStore;
  /** The inbound unit's public host name (MAILROOM_INBOUND_MX_HOST): the rua is `mailto:dmarc@<it>`. */
  inboundHost: string;
  clock: Clock;
}

/**
 * ReceivingService.GetDmarcSummary, for the Connect router's ReceivingService
 * implementation: `router.service(ReceivingService, { ...core, ...dmarcSummaryHandler(deps) })`.
 * Reports are kept by domain name; the workspace's claim to the domain is the gateway's to
 * check (the accounts unit's GetDomain for the caller's workspace) before it calls: see
 * DmarcReportStore. workspace_id is still required, so no caller forgets it.
 */
export function dmarcSummaryHandler(deps: DmarcSummaryDeps) {
  return {
    async getDmarcSummary(req: GetDmarcSummaryRequest): Promise<MessageInitShape<typeof GetDmarcSummaryResponseSchema>> {
      if (!req.workspaceId) throw badRequest("invalid_request", "workspace_id is required");
      const domain = req.domain.trim().toLowerCase().replace(/\.$/, "");
      if (!DOMAIN.test(domain)) throw badRequest("invalid_domain", `"${req.domain}" is not a valid domain name`);
      const since = req.since ? timestampDate(req.since) : new Date(deps.clock.now().getTime() - DEFAULT_DMARC_WINDOW_DAYS * 86_400_000);
      const summary = summarise(await deps.reports.reportsFor(domain, since));
      const dispositions = (d: { none: number; quarantine: number; reject: number }) => ({
        dispositionNone: BigInt(d.none),
        dispositionQuarantine: BigInt(d.quarantine),
        dispositionReject: BigInt(d.reject),
      });
      return {
        sources: summary.sources.map((s) => ({
          sourceIp: s.sourceIp,
          messages: BigInt(s.messages),
          spfAlignedPassRate: s.spfAlignedPassRate,
          dkimAlignedPassRate: s.dkimAlignedPassRate,
          dmarcPassRate: s.dmarcPassRate,
          ...dispositions(s.disposition),
          failingAlignment: s.failingAlignment,
        })),
        days: summary.days.map((d) => ({
          day: d.day,
          messages: BigInt(d.messages),
          spfAlignedPassRate: d.spfAlignedPassRate,
          dkimAlignedPassRate: d.dkimAlignedPassRate,
          dmarcPassRate: d.dmarcPassRate,
          ...dispositions(d.disposition),
        })),
        reports: summary.reports,
        reporters: summary.reporters,
        rua: ruaFor(deps.inboundHost),
      };
    },
  };
}
