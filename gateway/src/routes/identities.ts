import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";

const STATUS = z.enum(["VERIFIED", "PENDING", "FAILED"]);

/**
 * GET /v1/identities -> { identities: { emails: [{ email, status }], domains: [{ domain, status }] } }
 * The workspace's sender addresses and domains, verified and pending (a domain whose last DNS
 * check failed is FAILED).
 */
export const registerIdentities: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/identities",
    operationId: "listIdentities",
    tags: ["Identities"],
    summary: "The senders this workspace may use (VERIFIED) or has asked for (PENDING, FAILED)",
    scope: "api_read",
    responses: {
      200: {
        description: "The sender addresses and domains.",
        body: z
          .strictObject({
            identities: z.strictObject({
              emails: z.array(z.strictObject({ email: z.string(), status: STATUS })),
              domains: z.array(z.strictObject({ domain: z.string(), status: STATUS })),
            }),
          })
          .meta({ id: "Identities" }),
      },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply) => {
      const res = await deps.clients.accounts.listSenders({ workspaceId: workspaceOf(request) }, rpcOptions(request));
      return reply.send({
        identities: {
          emails: res.emails.map((e) => ({ email: e.email, status: e.verified ? "VERIFIED" : "PENDING" })),
          domains: res.domains.map((d) => ({ domain: d.domain, status: d.verified ? "VERIFIED" : d.verificationError ? "FAILED" : "PENDING" })),
        },
      });
    },
  });
};
