import type { AddressInfo } from "node:net";
import dns2 from "dns2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createResolver, generateDkimKeyPair } from "./dns.js";
import { dkimRecordName, parseTags } from "../domain/dns-policy.js";
import { mapResolver, memoryDirectory } from "../../../audience/src/testing.js";

/** A real DNS server on loopback (UDP) answering TXT queries from a mutable zone. */
async function startDnsServer(zone: Map<string, string[][]>) {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    for (const chunks of zone.get(question.name.toLowerCase()) ?? []) {
      response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data: chunks } as never);
    }
    void send(response);
  });
  await server.listen(0, "127.0.0.1");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Splits a TXT value into <=255-byte character-strings, as DNS publishes long keys. */
const chunked = (value: string) => value.match(/.{1,255}/g)!;

describe("domain verification", () => {
  describe("against a real DNS server on loopback", () => {
    const zone = new Map<string, string[][]>();
    let dnsServer: Awaited<ReturnType<typeof startDnsServer>>;
    beforeAll(async () => {
      dnsServer = await startDnsServer(zone);
    });
    afterAll(async () => dnsServer?.close());

    it("verifies once the published DKIM TXT (split in chunks) carries the domain's key", async () => {
      const dir = await memoryDirectory({ resolver: createResolver(`127.0.0.1:${dnsServer.port}`), dns: { spfInclude: "_spf.relay.test" } });
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      const added = await dir.senders.addDomain("ws_a", "Example.TEST");
      expect(added.domain).toBe("example.test");
      expect(added.verified).toBe(false);
      const dkim = added.records.find((r) => r.purpose === "dkim")!;
      expect(dkim).toMatchObject({ type: "TXT", name: "mailroom._domainkey.example.test" });
      expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
      expect(added.records.find((r) => r.purpose === "spf")).toMatchObject({ name: "example.test", value: "v=spf1 include:_spf.relay.test ~all" });
      expect(added.records.find((r) => r.purpose === "dmarc")).toMatchObject({ name: "_dmarc.example.test", value: expect.stringMatching(/^v=DMARC1; p=none/) });
      // The bounce subdomain (the VERP return path's domain): an MX to the inbound unit and an SPF
      // record (SPF is checked on the envelope sender's domain). Shown, not required to verify.
      expect(added.records.find((r) => r.purpose === "bounce-mx")).toEqual({
        type: "MX", purpose: "bounce-mx", name: "bounces.example.test", value: "10 inbound.mailroom.local", verified: false,
      });
      expect(added.records.find((r) => r.purpose === "bounce-spf")).toEqual({
        type: "TXT", purpose: "bounce-spf", name: "bounces.example.test", value: "v=spf1 include:_spf.relay.test ~all", verified: false,
      });

      // Nothing published yet: stays unverified, says why, CheckSender does not allow it.
      const first = await dir.senders.verifyDomain("ws_a", "example.test");
      expect(first.verified).toBe(false);
      expect(first.verificationError).toMatch(/no TXT record at mailroom._domainkey.example.test/);
      expect((await dir.senders.check("ws_a", "news@example.test")).allowed).toBe(false);

      // A wrong key does not verify it either.
      zone.set(dkimRecordName("example.test", "mailroom"), [["v=DKIM1; k=rsa; p=AAAAB3NzaC1yc2E"]]);
      expect((await dir.senders.verifyDomain("ws_a", "example.test")).verified).toBe(false);

      zone.set(dkimRecordName("example.test", "mailroom"), [chunked(dkim.value)]);
      zone.set("example.test", [["v=spf1 include:_spf.relay.test ~all"]]);
      zone.set("_dmarc.example.test", [["v=DMARC1; p=none"]]);
      const verified = await dir.senders.verifyDomain("ws_a", "example.test");
      expect(verified.verified).toBe(true);
      expect(verified.verificationError).toBe("");
      // Verified without the bounce domain's records: they are informational.
      expect(verified.records.map((r) => [r.purpose, r.verified])).toEqual([
        ["dkim", true], ["spf", true], ["dmarc", true], ["bounce-mx", false], ["bounce-spf", false],
      ]);
      const check = await dir.senders.check("ws_a", "News <news@EXAMPLE.test>");
      expect(check).toMatchObject({ allowed: true, address: "news@example.test", name: "News" });
      expect(check.dkim).toMatchObject({ domain: "example.test", selector: "mailroom" });
      expect(check.dkim!.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    });

    it("reports an unreachable DNS server as a verification error, not a crash", async () => {
      const dir = await memoryDirectory({ resolver: createResolver("127.0.0.1:9", { timeoutMs: 200, tries: 1 }) });
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      await dir.senders.addDomain("ws_a", "down.test");
      const res = await dir.senders.verifyDomain("ws_a", "down.test");
      expect(res.verified).toBe(false);
      expect(res.verificationError).toMatch(/DNS lookup of mailroom._domainkey.down.test failed|no TXT record/);
    }, 20_000);
  });

  it("works with an injected resolver and keeps tenants apart", async () => {
    const resolver = mapResolver();
    const dir = await memoryDirectory({ resolver, generateDkimKey: generateDkimKeyPair });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    const a = await dir.senders.addDomain("ws_a", "shared.test");
    const b = await dir.senders.addDomain("ws_b", "shared.test");
    expect(a.publicKey).not.toBe(b.publicKey);
    resolver.records["mailroom._domainkey.shared.test"] = [[a.records[0].value]];
    expect((await dir.senders.verifyDomain("ws_a", "shared.test")).verified).toBe(true);
    // B's key is not the published one: B cannot send as shared.test.
    expect((await dir.senders.verifyDomain("ws_b", "shared.test")).verified).toBe(false);
    expect((await dir.senders.check("ws_b", "x@shared.test")).allowed).toBe(false);
    expect((await dir.senders.check("ws_a", "x@shared.test")).allowed).toBe(true);
    // B cannot read A's domain record either (only its own).
    expect((await dir.senders.getDomain("ws_b", "shared.test")).publicKey).toBe(b.publicKey);
  });

  it("shows the bounce MX at MAILROOM_INBOUND_MX_HOST, and no bounce records with a shared bounce domain", async () => {
    const own = await memoryDirectory({ resolver: mapResolver(), generateDkimKey: generateDkimKeyPair, dns: { inboundMxHost: "mx.mailroom.example" } });
    await own.workspaces.create({ id: "ws_a", name: "A" });
    const added = await own.senders.addDomain("ws_a", "acme.test");
    expect(added.records.find((r) => r.purpose === "bounce-mx")).toMatchObject({ type: "MX", name: "bounces.acme.test", value: "10 mx.mailroom.example" });
    // DMARC aggregate reports go to the inbound unit, which reads them.
    expect(added.records.find((r) => r.purpose === "dmarc")?.value).toBe("v=DMARC1; p=none; rua=mailto:dmarc@mx.mailroom.example");
    const shared = await memoryDirectory({ resolver: mapResolver(), generateDkimKey: generateDkimKeyPair, dns: { bounceDomain: "bounce.mailroom.example" } });
    await shared.workspaces.create({ id: "ws_a", name: "A" });
    expect((await shared.senders.addDomain("ws_a", "acme.test")).records.map((r) => r.purpose)).toEqual(["dkim", "spf", "dmarc"]);
  });

  it("parses DKIM tags with folding whitespace", () => {
    const tags = parseTags("v=DKIM1;  k=rsa;\tp=MIIB Ajan\n BgkqhkiG9w0BAQEFAAOC");
    expect(tags.get("p")).toBe("MIIBAjanBgkqhkiG9w0BAQEFAAOC");
    expect(tags.get("v")).toBe("DKIM1");
  });
});
