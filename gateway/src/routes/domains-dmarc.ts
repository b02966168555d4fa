import { z } from "zod";
import { DMARC_DEFAULT_DAYS } from "@mailroom/http/constants.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";

const rate = z.number().min(0).max(1);
const dispositions = z
  .strictObject({ none: z.number().int(), quarantine: z.number().int(), reject: z.number().int() })
  .meta({ description: "Messages by what the receivers did with them (policy_evaluated/disposition)." });

export const dmarcSummarySchema = z
  .strictObject({
    domain: z.string(),
    since: z.string().meta({ description: "Reports whose period ends at or after this time are counted (ISO 8601)." }),
    reports: z.number().int().meta({ description: "Aggregate reports counted (a report mailed twice counts once)." }),
    reporters: z.array(z.string()).meta({ description: "The reporting organisations (`org_name`)." }),
    rua: z.string().meta({ description: "The address to publish in the domain's DMARC record (`rua=…`) so reports come here: `mailto:dmarc@<inbound host>`." }),
    sources: z.array(z.strictObject({
      sourceIp: z.string(),
      messages: z.number().int(),
      spfAlignedPassRate: rate.meta({ description: "Share of messages whose SPF result passed and aligned with the From domain." }),
      dkimAlignedPassRate: rate.meta({ description: "Share of messages whose DKIM result passed and aligned with the From domain." }),
      dmarcPassRate: rate.meta({ description: "Share of messages that passed DMARC: SPF or DKIM passed aligned." }),
      disposition: dispositions,
      failingAlignment: z.boolean().meta({ description: "Some of its messages passed neither SPF nor DKIM aligned: a source to look at (or to authorise)." }),
    })).meta({ description: "Per sending IP address, most messages first." }),
    days: z.array(z.strictObject({
      day: z.string().meta({ description: "YYYY-MM-DD (UTC): the day the report's period begins." }),
      messages: z.number().int(),
      spfAlignedPassRate: rate,
      dkimAlignedPassRate: rate,
      dmarcPassRate: rate,
      disposition: dispositions,
    })).meta({ description: "Per day, oldest first." }),
  })
  .meta({ id: "DmarcSummary" });

const params = z.object({ id: z.string().min(1).max(253).meta({ description: "The sending domain, as `GET /v1/identities` lists it (`acme.com`)." }) });
const query = z.strictObject({
  since: z.iso.datetime({ offset: true }).optional().meta({ description: `Count reports whose period ends at or after this time (ISO 8601); default ${DMARC_DEFAULT_DAYS} days ago.` }),
});

/**
 * GET /v1/domains/:id/dmarc?since -> the DMARC aggregate reports received for one of the
 * workspace's sending domains (DESIGN §10.4), summed per source IP and per day. The inbound
 * unit keeps reports by domain name; the workspace's claim is checked here, by the accounts unit:
 * another workspace's domain is a 404, a domain not verified (its DKIM key, so its DNS, not
 * shown to be this workspace's) a 409, before the inbound unit is asked.
 */
export const registerDomainDmarc: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/domains/:id/dmarc",
    operationId: "getDomainDmarc",
    tags: ["Identities"],
    summary: "DMARC aggregate reports for a sending domain, summarised",
    description:
      "Reports mailed by receivers (Google, Microsoft, Yahoo…) to the `rua` address of the domain's DMARC record, read from their XML, gzip or zip files: per source IP and per day, messages, SPF and DKIM aligned pass rates and dispositions; sources whose messages passed neither are flagged. Publish `rua` (in the answer) in `_dmarc.<domain>` to receive them.",
    scope: "api_read",
    params,
    query,
    responses: {
      200: { description: "The summary.", body: dmarcSummarySchema },
      400: { description: "`invalid_request`: a bad `since`.", body: apiErrorSchema },
      404: { description: "`domain_not_found`: not a domain of this workspace (or not a domain name).", body: apiErrorSchema },
      409: { description: "`domain_not_verified`: the domain's DNS records are not verified yet.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const workspaceId = workspaceOf(request);
      const options = rpcOptions(request);
      // A name that is no domain at all names no domain of this workspace: 404, as an unknown one.
      const { domain } = await deps.clients.accounts.getDomain({ workspaceId, domain: params.id }, options).catch((err: unknown) => {
        if (errorInfoOf(err)?.code === "invalid_domain") throw refusal({ code: "domain_not_found", message: `Domain ${params.id} not found` });
        throw err;
      });
      if (!domain) throw refusal({ code: "domain_not_found", message: `Domain ${params.id} not found` });
      if (!domain.verified) {
        throw refusal({ code: "domain_not_verified", message: `Domain ${domain.domain} is not verified yet: its DMARC reports are shown once it is.` });
      }
      const since = query.since ? new Date(query.since) : new Date(Date.now() - DMARC_DEFAULT_DAYS * 86_400_000);
      const res = await deps.clients.receiving.getDmarcSummary({ workspaceId, domain: domain.domain, since: timestampFromDate(since) }, options);
      const disposition = (d: { dispositionNone: bigint; dispositionQuarantine: bigint; dispositionReject: bigint }) => ({
        none: Number(d.dispositionNone), quarantine: Number(d.dispositionQuarantine), reject: Number(d.dispositionReject),
      });
      return reply.send({
        domain: domain.domain,
        since: since.toISOString(),
        reports: res.reports,
        reporters: res.reporters,
        rua: res.rua,
        sources: res.sources.map((s) => ({
          sourceIp: s.sourceIp, messages: Number(s.messages), spfAlignedPassRate: s.spfAlignedPassRate, dkimAlignedPassRate: s.dkimAlignedPassRate,
          dmarcPassRate: s.dmarcPassRate, disposition: disposition(s), failingAlignment: s.failingAlignment,
        })),
        days: res.days.map((d) => ({
          day: d.day, messages: Number(d.messages), spfAlignedPassRate: d.spfAlignedPassRate, dkimAlignedPassRate: d.dkimAlignedPassRate,
          dmarcPassRate: d.dmarcPassRate, disposition: disposition(d),
        })),
      });
    },
  });
