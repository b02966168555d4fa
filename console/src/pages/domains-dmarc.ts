/**
 * The DMARC card of a domain page: asks the inbound unit for the summary of the aggregate
 * reports (ReceivingService.GetDmarcSummary, as GET /v1/domains/:id/dmarc). The markup is
 * views/domains-dmarc.ts.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyRequest } from "fastify";
import type { Domain } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { DMARC_DEFAULT_DAYS } from "@mailroom/http/constants.js";
import type { ConsoleDeps } from "../deps.js";
import type { DmarcCardState } from "../views/domains-dmarc.js";

/** What the card shows; never throws (the card says why there is no summary). */
export async function dmarcCardState(deps: ConsoleDeps, request: FastifyRequest, workspaceId: string, domain: Domain): Promise<DmarcCardState> {
  if (!domain.verified) return { kind: "unverified" };
  try {
    const since = new Date(Date.now() - DMARC_DEFAULT_DAYS * 86_400_000);
    const summary = await deps.clients.receiving.getDmarcSummary({ workspaceId, domain: domain.domain, since: timestampFromDate(since) }, { ...rpcOptions(request), timeoutMs: 15_000 });
    return { kind: "summary", summary };
  } catch (err) {
    return { kind: "unavailable", message: bodyFromError(err).message };
  }
}
