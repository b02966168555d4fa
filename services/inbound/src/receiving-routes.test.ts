import { describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { ReceivingService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { receivingRoutes } from "./receiving-routes.js";
import { mime, testReceiving } from "./receiving-testing.js";

async function client(withDmarc = false) {
  const t = await testReceiving();
  const routes = receivingRoutes({
    config: t.config,
    receiver: t.receiver,
    ...(withDmarc ? { dmarcSummary: async () => ({ reports: 2, rua: "mailto:dmarc@mx.mailroom.test" }) } : {}),
  });
  return { t, rpc: createClient(ReceivingService, memoryTransport(routes)) };
}
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err) => ({ code: ConnectError.from(err).code, app: errorInfoOf(err)?.code }));

describe("ReceivingService routes", () => {
  it("answers plain messages with the MX to publish and refuses bad input with the domain's codes", async () => {
    const { t, rpc } = await client();
    t.mx.zone.set("acme.test", ["mx.mailroom.test"]);
    expect(await refusal(rpc.createInboundDomain({ workspaceId: "ws_a", domain: "acme.test" }))).toEqual({ code: Code.AlreadyExists, app: "domain_not_verified" });
    t.sendingDomains.allow("ws_a", "acme.test");
    const { domain } = await rpc.createInboundDomain({ workspaceId: "ws_a", domain: "acme.test" });
    expect(domain).toMatchObject({ status: "verified", mxHost: "mx.mailroom.test", mxPriority: 10 });
    expect(await refusal(rpc.createInboundDomain({ workspaceId: "ws_a", domain: "not a domain" }))).toEqual({ code: Code.InvalidArgument, app: "invalid_inbound_domain" });
    expect(await refusal(rpc.createInboundDomain({ workspaceId: "", domain: "b.test" }))).toEqual({ code: Code.InvalidArgument, app: "invalid_request" });
    expect(await refusal(rpc.listReceivedEmails({ workspaceId: "ws_a", limit: 101 }))).toEqual({ code: Code.InvalidArgument, app: "invalid_request" });
    const { rule } = await rpc.createInboundRule({ workspaceId: "ws_a", domainId: domain!.id, match: "*", action: "store" });
    expect((await rpc.listInboundRules({ workspaceId: "ws_a", domainId: domain!.id })).rules.map((r) => r.id)).toEqual([rule!.id]);
    await rpc.deleteInboundRule({ workspaceId: "ws_a", domainId: domain!.id, id: rule!.id });
    await rpc.deleteInboundDomain({ workspaceId: "ws_a", id: domain!.id });
    expect((await rpc.listInboundDomains({ workspaceId: "ws_a" })).domains).toEqual([]);
  });

  it("streams an empty attachment as one chunk carrying its info", async () => {
    const { t, rpc } = await client();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "store" }]);
    const raw = mime({ attachment: { filename: "empty.txt", contentType: "text/plain", content: Buffer.alloc(0) } });
    const [outcome] = await t.inbound.receive({ mailFrom: "ann@example.test", rcptTo: ["x@acme.test"] }, new TextEncoder().encode(raw));
    const chunks = [];
    for await (const c of rpc.getReceivedAttachment({ workspaceId: "ws_a", emailId: (outcome as { id: string }).id, attachmentId: "att_1" })) chunks.push(c);
    expect(chunks).toHaveLength(1);
    expect(chunks[0].info).toMatchObject({ filename: "empty.txt", size: 0n });
    expect(chunks[0].data.byteLength).toBe(0);
  });

  it("leaves GetDmarcSummary to the DMARC code: Unimplemented without it", async () => {
    const without = await client();
    expect(await refusal(without.rpc.getDmarcSummary({ workspaceId: "ws_a", domain: "acme.test" }))).toMatchObject({ code: Code.Unimplemented });
    const withDmarc = await client(true);
    expect(await withDmarc.rpc.getDmarcSummary({ workspaceId: "ws_a", domain: "acme.test" })).toMatchObject({ reports: 2 });
  });
});
