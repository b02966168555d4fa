import type { AddressInfo } from "node:net";
import dns2 from "dns2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createResolver, createSendingDns, reverseName } from "./dns.js";
import { memoryDirectory } from "../../../audience/src/testing.js";
import { sameAddress } from "../domain/direct-sending.js";

type Zone = { txt: Map<string, string[]>; a: Map<string, string[]>; aaaa: Map<string, string[]>; ptr: Map<string, string[]> };

/** A real DNS server on loopback (UDP) answering TXT, A, AAAA and PTR queries from a mutable zone. */
async function startDnsServer(zone: Zone) {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [q] = request.questions;
    const name = q.name.toLowerCase();
    const base = { name: q.name, class: Packet.CLASS.IN, ttl: 1 };
    if (q.type === Packet.TYPE.TXT) for (const v of zone.txt.get(name) ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: [v] } as never);
    if (q.type === Packet.TYPE.A) for (const v of zone.a.get(name) ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address: v } as never);
    if (q.type === Packet.TYPE.AAAA) for (const v of zone.aaaa.get(name) ?? []) response.answers.push({ ...base, type: Packet.TYPE.AAAA, address: v } as never);
    if (q.type === Packet.TYPE.PTR) for (const v of zone.ptr.get(name) ?? []) response.answers.push({ ...base, type: Packet.TYPE.PTR, domain: v } as never);
    void send(response);
  });
  await server.listen(0, "127.0.0.1");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe("direct-sending DNS check against a real DNS server on loopback", () => {
  const zone: Zone = { txt: new Map(), a: new Map(), aaaa: new Map(), ptr: new Map() };
  let server: Awaited<ReturnType<typeof startDnsServer>>;
  let dir: Awaited<ReturnType<typeof memoryDirectory>>;

  beforeAll(async () => {
    server = await startDnsServer(zone);
    const resolver = createResolver(`127.0.0.1:${server.port}`, { timeoutMs: 1_000, tries: 1 });
    dir = await memoryDirectory({ resolver, sendingDns: createSendingDns(resolver) });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    await dir.senders.addDomain("ws_a", "acme.test");
  });
  afterAll(async () => server?.close());

  it("finds nothing published: no PTR, SPF none for the domain and its return path", async () => {
    const res = await dir.senders.checkDirectSending("ws_a", "acme.test", "192.0.2.10", "mta.acme.test");
    expect(res).toMatchObject({ ptrNames: [], confirmedName: "", ehloMatches: false, reverseError: "no PTR record for 192.0.2.10" });
    expect(res.spf.map((s) => [s.domain, s.role, s.result])).toEqual([["acme.test", "from", "none"], ["bounces.acme.test", "return-path", "none"]]);
  });

  it("confirms forward-confirmed reverse DNS equal to the EHLO name and SPF passing through an include", async () => {
    zone.ptr.set("10.2.0.192.in-addr.arpa", ["mta.acme.test"]);
    zone.a.set("mta.acme.test", ["192.0.2.10"]);
    zone.txt.set("acme.test", ["v=spf1 include:_spf.acme.test -all"]);
    zone.txt.set("_spf.acme.test", ["v=spf1 ip4:192.0.2.0/24 -all"]);
    zone.txt.set("bounces.acme.test", ["v=spf1 ip4:198.51.100.1 ~all"]);
    const res = await dir.senders.checkDirectSending("ws_a", "acme.test", "192.0.2.10", "MTA.acme.test");
    expect(res).toMatchObject({ ptrNames: ["mta.acme.test"], confirmedName: "mta.acme.test", ehloMatches: true, reverseError: "" });
    expect(res.spf).toEqual([
      { domain: "acme.test", role: "from", result: "pass", detail: "v=spf1 include:_spf.acme.test -all" },
      { domain: "bounces.acme.test", role: "return-path", result: "softfail", detail: "v=spf1 ip4:198.51.100.1 ~all" },
    ]);
  });

  it("does not confirm a PTR name that resolves elsewhere, and tells a confirmed name unlike the EHLO name", async () => {
    zone.ptr.set("11.2.0.192.in-addr.arpa", ["other.acme.test"]);
    zone.a.set("other.acme.test", ["192.0.2.99"]);
    const wrong = await dir.senders.checkDirectSending("ws_a", "acme.test", "192.0.2.11", "mta.acme.test");
    expect(wrong).toMatchObject({ ptrNames: ["other.acme.test"], confirmedName: "", reverseError: "other.acme.test does not resolve back to 192.0.2.11" });
    zone.a.set("other.acme.test", ["192.0.2.11"]);
    const unlike = await dir.senders.checkDirectSending("ws_a", "acme.test", "192.0.2.11", "mta.acme.test");
    expect(unlike).toMatchObject({ confirmedName: "other.acme.test", ehloMatches: false });
  });

  it("checks IPv6 addresses (PTR in ip6.arpa, AAAA back)", async () => {
    zone.ptr.set("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", ["mta6.acme.test"]);
    zone.aaaa.set("mta6.acme.test", ["2001:db8::1"]);
    const res = await dir.senders.checkDirectSending("ws_a", "acme.test", "2001:db8::1", "mta6.acme.test");
    expect(res).toMatchObject({ confirmedName: "mta6.acme.test", ehloMatches: true });
  });

  it("answers only for the workspace's own domains and refuses an address that is not an IP", async () => {
    await expect(dir.senders.checkDirectSending("ws_b", "acme.test", "192.0.2.10", "mta.acme.test")).rejects.toMatchObject({ code: "domain_not_found" });
    await expect(dir.senders.checkDirectSending("ws_a", "acme.test", "mta.acme.test", "mta.acme.test")).rejects.toMatchObject({ code: "invalid_request" });
  });
});

describe("sameAddress", () => {
  it("compares IPv6 spellings and IPv4-mapped addresses", () => {
    expect(sameAddress("2001:db8::1", "2001:0db8:0:0:0:0:0:1")).toBe(true);
    expect(sameAddress("::ffff:192.0.2.1", "192.0.2.1")).toBe(true);
    expect(sameAddress("192.0.2.1", "192.0.2.2")).toBe(false);
  });
});

describe("reverseName", () => {
  it("names the PTR query of IPv4 and IPv6 addresses", () => {
    expect(reverseName("192.0.2.10")).toBe("10.2.0.192.in-addr.arpa");
    expect(reverseName("2001:db8::1")).toBe("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
  });
});
