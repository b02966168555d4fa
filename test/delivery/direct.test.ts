/**
 * Direct-to-MX delivery against real DNS (a dns2 server on loopback answering MX, A and TXT
 * for test domains), real SMTP servers (smtp-server, each MX host on its own 127.0.0.x
 * address at the suite's MX port), a real HTTPS MTA-STS policy host, certificates made by
 * openssl, and — for greylisting — the real delivery pipeline (NATS JetStream, the store).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { freePort } from "../harness/ports.js";
import { createDirectTransport, loadDirectSettings } from "../../services/delivery/src/adapters/direct/index.js";
import { SmtpFailure, type MailTransport, type OutgoingMail } from "../../services/delivery/src/domain/ports.js";
import { compiledFrom, silentLogger } from "../../services/delivery/src/testing.js";
import { makePki, startDns, startMxSink, startPolicyHost, type MxSink, type PolicyHost, type TestDns, type TestPki } from "./direct-support.js";
import { deliveryEnv, listenEvents, publishJob, putContents, startDeliveryUnderTest, startNeighbours, tempDir, type Neighbours } from "./support.js";

let serial = 0;
function mail(to: string, others?: string[]): OutgoingMail {
  serial += 1;
  return {
    lane: "transactional",
    envelope: { from: "bounces+x@bounces.acme.test", to, ...(others ? { others } : {}) },
    from: { name: "Acme", address: "news@acme.test" },
    to,
    subject: `Hello ${serial}`,
    html: "<p>Hello</p>",
    text: "Hello",
    messageId: `<m${serial}@acme.test>`,
    headers: [],
    meta: { deliveryId: `dlv_${serial}`, workspaceId: "ws_acme" },
  };
}

async function failureOf(p: Promise<unknown>): Promise<SmtpFailure> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SmtpFailure);
  return err as SmtpFailure;
}

const POLICY = (mode: string, ...mx: string[]) => `version: STSv1\r\nmode: ${mode}\r\n${mx.map((m) => `mx: ${m}\r\n`).join("")}max_age: 86400\r\n`;

describe("direct delivery (MX lookup, STARTTLS, MTA-STS, limits)", () => {
  let dns: TestDns;
  let pki: TestPki;
  let mxPort: number;
  let stsPort: number;
  let sinkA: MxSink, sinkB: MxSink, busySink: MxSink, tlsSink: MxSink, verifiedSink: MxSink, limitSink: MxSink, greySink: MxSink, otherSink: MxSink;
  let policyHost: PolicyHost;
  let env: Record<string, string>;
  let transport: MailTransport;

  beforeAll(async () => {
    [dns, pki] = await Promise.all([startDns(), makePki()]);
    mxPort = await freePort("127.0.0.2");
    stsPort = await freePort("127.0.0.9");
    const [selfSigned, mxCert, policyCert] = await Promise.all([
      pki.selfSigned(["mx.tls.test"]),
      pki.issue(["mx.sts.test"]),
      pki.issue(["mta-sts.sts.test", "mta-sts.sts-plain.test", "mta-sts.sts-selfsigned.test", "mta-sts.sts-mismatch.test"]),
    ]);
    [busySink, sinkA, sinkB, tlsSink, verifiedSink, limitSink, greySink, otherSink, policyHost] = await Promise.all([
      startMxSink("127.0.0.11", mxPort),
      startMxSink("127.0.0.2", mxPort),
      startMxSink("127.0.0.3", mxPort),
      startMxSink("127.0.0.5", mxPort, selfSigned),
      startMxSink("127.0.0.6", mxPort, mxCert),
      startMxSink("127.0.0.7", mxPort),
      startMxSink("127.0.0.8", mxPort),
      startMxSink("127.0.0.10", mxPort),
      startPolicyHost("127.0.0.9", stsPort, policyCert),
    ]);
    const host = (name: string, address: string) => dns.add(name, { type: "A", address });
    host("mx-down.prio.test", "127.0.0.4"); // nothing listens there: connection refused
    host("mx-a.prio.test", "127.0.0.2");
    host("mx-b.prio.test", "127.0.0.3");
    dns.add("prio.test", { type: "MX", exchange: "mx-down.prio.test", priority: 10 }, { type: "MX", exchange: "mx-a.prio.test", priority: 20 }, { type: "MX", exchange: "mx-b.prio.test", priority: 30 });
    host("mx-busy.busy.test", "127.0.0.11");
    dns.add("busy.test", { type: "MX", exchange: "mx-busy.busy.test", priority: 10 }, { type: "MX", exchange: "mx-b.prio.test", priority: 20 });
    dns.add("order.test", { type: "MX", exchange: "mx-b.prio.test", priority: 20 }, { type: "MX", exchange: "mx-a.prio.test", priority: 5 });
    host("bare.test", "127.0.0.3"); // no MX: its own address (RFC 5321 §5.1)
    dns.add("nullmx.test", { type: "MX", exchange: ".", priority: 0 });
    dns.failing.add("servfail.test");
    host("mx.tls.test", "127.0.0.5");
    dns.add("tls.test", { type: "MX", exchange: "mx.tls.test", priority: 10 });
    host("mx.sts.test", "127.0.0.6");
    host("mx-plain.sts.test", "127.0.0.2");
    for (const [domain, mx, policy] of [
      ["sts.test", ["mx-plain.sts.test", "mx.sts.test"], POLICY("enforce", "mx-plain.sts.test", "mx.sts.test")],
      ["sts-plain.test", ["mx-plain.sts.test"], POLICY("enforce", "mx-plain.sts.test")],
      ["sts-selfsigned.test", ["mx.tls.test"], POLICY("enforce", "mx.tls.test")],
      ["sts-mismatch.test", ["mx-a.prio.test"], POLICY("enforce", "*.elsewhere.test")],
    ] as const) {
      mx.forEach((exchange, i) => dns.add(domain, { type: "MX", exchange, priority: 10 * (i + 1) }));
      dns.add(`_mta-sts.${domain}`, { type: "TXT", text: "v=STSv1; id=20261127T01" });
      host(`mta-sts.${domain}`, "127.0.0.9");
      policyHost.policies.set(domain, policy);
    }
    host("mx.limits.test", "127.0.0.7");
    dns.add("limits.test", { type: "MX", exchange: "mx.limits.test", priority: 10 });
    host("mx.grey.test", "127.0.0.8");
    dns.add("grey.test", { type: "MX", exchange: "mx.grey.test", priority: 10 });
    host("mx.other.test", "127.0.0.10");
    dns.add("other.test", { type: "MX", exchange: "mx.other.test", priority: 10 });

    env = {
      MAILROOM_DELIVERY_DNS_SERVERS: dns.server,
      MAILROOM_DELIVERY_MX_PORT: String(mxPort),
      MAILROOM_DELIVERY_MTA_STS_PORT: String(stsPort),
      MAILROOM_DELIVERY_EXTRA_CA_FILE: pki.caFile,
      MAILROOM_DELIVERY_EHLO_NAME: "mta.mailroom.test",
      MAILROOM_DELIVERY_LOCAL_ADDRESS: "127.0.0.1",
      MAILROOM_DELIVERY_DOMAIN_LIMITS: JSON.stringify({ "limits.test": { connections: 2 } }),
    };
    transport = createDirectTransport(loadDirectSettings(env), { logger: silentLogger, skeletonCacheEntries: 0, timeoutMs: 5_000 });
  }, 60_000);

  afterAll(async () => {
    await transport?.close();
    await Promise.all([busySink, sinkA, sinkB, tlsSink, verifiedSink, limitSink, greySink, otherSink, policyHost].map((s) => s?.stop()));
    await dns?.close();
    await pki?.remove();
  });

  const to = (sink: MxSink, address: string) => sink.received.filter((m) => m.to.includes(address));

  it("tries MX hosts by preference and falls to the next when one refuses connections", async () => {
    const result = await transport.send(mail("ann@prio.test"));
    expect(result).toMatchObject({ code: 250, route: "direct" });
    expect(to(sinkA, "ann@prio.test")).toHaveLength(1);
    expect(to(sinkB, "ann@prio.test")).toHaveLength(0);
    expect(to(sinkA, "ann@prio.test")[0]!.helo).toBe("mta.mailroom.test");

    await transport.send(mail("bob@order.test"));
    expect(to(sinkA, "bob@order.test")).toHaveLength(1);
    expect(to(sinkB, "bob@order.test")).toHaveLength(0);
  });

  it("falls to the next MX when one answers 421 instead of a greeting", async () => {
    busySink.connectFault = { code: 421, message: "4.3.2 too busy, try later" };
    await transport.send(mail("bea@busy.test"));
    expect(busySink.connections).toBeGreaterThan(0);
    expect(to(sinkB, "bea@busy.test")).toHaveLength(1);
  });

  it("delivers to the domain's own address when it has no MX record", async () => {
    await transport.send(mail("cy@bare.test"));
    expect(to(sinkB, "cy@bare.test")).toHaveLength(1);
  });

  it("refuses a null MX domain and a domain that does not exist for good; a DNS failure is temporary", async () => {
    const nullMx = await failureOf(transport.send(mail("dee@nullmx.test")));
    expect(nullMx).toMatchObject({ code: 556, aboutRecipient: true, beforeData: true });
    expect(nullMx.message).toMatch(/null MX/);
    const missing = await failureOf(transport.send(mail("eve@nxdomain.test")));
    expect(missing).toMatchObject({ code: 550, aboutRecipient: true });
    const servfail = await failureOf(transport.send(mail("fay@servfail.test")));
    expect(servfail).toMatchObject({ code: 0, aboutRecipient: false, beforeData: true });
  });

  it("uses STARTTLS when offered, even with a self-signed certificate (opportunistic)", async () => {
    await transport.send(mail("gus@tls.test"));
    const [got] = to(tlsSink, "gus@tls.test");
    expect(got?.secure).toBe(true);
  });

  it("MTA-STS enforce: skips an MX without STARTTLS for one with a verified certificate", async () => {
    await transport.send(mail("hal@sts.test"));
    expect(to(sinkA, "hal@sts.test")).toHaveLength(0);
    expect(to(verifiedSink, "hal@sts.test")).toMatchObject([{ secure: true }]);
    await transport.send(mail("hal2@sts.test"));
    expect(to(verifiedSink, "hal2@sts.test")).toHaveLength(1);
    // The policy is cached (max_age) while the TXT id stays the same.
    expect(policyHost.fetches.filter((f) => f.startsWith("mta-sts.sts.test/"))).toHaveLength(1);
  });

  it("MTA-STS enforce: a host without STARTTLS, with an unverifiable certificate or not in the policy is refused, temporarily", async () => {
    const plain = await failureOf(transport.send(mail("ida@sts-plain.test")));
    expect(plain).toMatchObject({ code: 0, aboutRecipient: false, beforeData: true });
    expect(plain.message).toMatch(/STARTTLS/);
    expect(to(sinkA, "ida@sts-plain.test")).toHaveLength(0);

    const selfSigned = await failureOf(transport.send(mail("jo@sts-selfsigned.test")));
    expect(selfSigned).toMatchObject({ code: 0, aboutRecipient: false });
    expect(to(tlsSink, "jo@sts-selfsigned.test")).toHaveLength(0);

    const mismatch = await failureOf(transport.send(mail("kim@sts-mismatch.test")));
    expect(mismatch.message).toMatch(/MTA-STS/);
    expect(to(sinkA, "kim@sts-mismatch.test")).toHaveLength(0);
  });

  it("keeps to the per-domain connection limit (counted at the sink) and reuses connections", async () => {
    limitSink.dataDelayMs = 100;
    const sends = Array.from({ length: 10 }, (_, i) => transport.send(mail(`n${i}@limits.test`)));
    const results = await Promise.all(sends);
    expect(results.every((r) => r.code === 250)).toBe(true);
    expect(limitSink.received).toHaveLength(10);
    expect(limitSink.maxConcurrent).toBe(2);
    expect(limitSink.connections).toBeLessThanOrEqual(2);
    expect(new Set(limitSink.received.map((m) => m.session)).size).toBeLessThanOrEqual(2);
  });

  it("sends cc/bcc at other domains after `to`'s; their permanent refusals come back as refused", async () => {
    const result = await transport.send(mail("lea@prio.test", ["max@prio.test", "ned@other.test", "oz@nullmx.test"]));
    expect(result.code).toBe(250);
    expect(sinkA.received.find((m) => m.to.includes("lea@prio.test"))?.to).toEqual(["lea@prio.test", "max@prio.test"]);
    expect(to(otherSink, "ned@other.test")).toHaveLength(1);
    expect(result.refused).toEqual([expect.objectContaining({ address: "oz@nullmx.test", code: 556 })]);
  });

  it("a greylisting 451 at RCPT TO is a temporary failure about the recipient", async () => {
    let first = true;
    greySink.rcptFault = () => (first ? ((first = false), { code: 451, message: "4.7.1 greylisted, try again later" }) : undefined);
    const failure = await failureOf(transport.send(mail("pat@grey.test")));
    expect(failure).toMatchObject({ code: 451, aboutRecipient: true, beforeData: true });
    await transport.send(mail("pat@grey.test"));
    expect(to(greySink, "pat@grey.test")).toHaveLength(1);
    greySink.rcptFault = undefined;
  });

  describe("through the delivery pipeline (MAILROOM_DELIVERY_MODE=direct: NATS JetStream, the store, the deliverer's back-off)", () => {
    let nats: NatsHandle;
    let nc: NatsConnection;
    let neighbours: Neighbours;
    let data: Awaited<ReturnType<typeof tempDir>>;
    let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
    let events: ReturnType<typeof listenEvents>;

    beforeAll(async () => {
      [nats, neighbours, data] = await Promise.all([startNats(), startNeighbours(), tempDir("mailroom-direct-")]);
      neighbours.senders.set("ws_acme/news@acme.test", { address: "news@acme.test" });
      nc = await connectNats(nats.url, "direct-suite");
      await ensureMailStreams(nc);
      await putContents(nc, new Map([["ws_acme/email:trs_1", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>", workspaceId: "ws_acme" })]]));
      events = listenEvents(nc);
      delivery = await startDeliveryUnderTest(
        nc,
        deliveryEnv({ natsUrl: nats.url, dataDir: data.dir, neighboursUrl: neighbours.url, extra: { ...env, MAILROOM_DELIVERY_MODE: "direct" } }),
      );
    }, 60_000);

    afterAll(async () => {
      await delivery?.stop();
      events?.stop();
      await nc?.close();
      await Promise.all([nats?.stop(), neighbours?.stop()]);
      await data?.remove();
    });

    it("greylisting: 451 then 250 is deferred, then sent by the retry", async () => {
      const seen = new Map<string, number>();
      greySink.rcptFault = (rcpt) => {
        const n = (seen.get(rcpt) ?? 0) + 1;
        seen.set(rcpt, n);
        return n === 1 ? { code: 451, message: "4.7.1 greylisted, try again later" } : undefined;
      };
      await publishJob(nc, { deliveryId: "dlv_grey", to: "quinn@grey.test" });
      await events.waitFor((e) => e.some((x) => x.deliveryId === "dlv_grey" && x.type === MailEventType.SENT), 20_000);
      const types = events.of("dlv_grey").map((e) => e.type);
      expect(types[0]).toBe(MailEventType.DEFERRED);
      expect(events.of("dlv_grey")[0]).toMatchObject({ smtpCode: 451, route: "direct" });
      expect(types).toContain(MailEventType.SENT);
      expect(to(greySink, "quinn@grey.test")).toHaveLength(1);
      greySink.rcptFault = undefined;
    });

    it("a null MX domain bounces at once", async () => {
      await publishJob(nc, { deliveryId: "dlv_nullmx", to: "ray@nullmx.test" });
      await events.waitFor((e) => e.some((x) => x.deliveryId === "dlv_nullmx"), 20_000);
      expect(events.of("dlv_nullmx")[0]).toMatchObject({ type: MailEventType.BOUNCED, smtpCode: 556 });
    });
  });
});
