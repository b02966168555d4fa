/**
 * The delivery service against a real nats-server (JetStream), a real SMTP server, its
 * real store on disk and real Connect calls to stand-in neighbours.
 */
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dkimVerify } from "mailauth";
import PostalMime from "postal-mime";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { startSmtpSink, type SinkBehaviour, type SmtpSink } from "../harness/smtp-sink.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DELIVERY_STREAM } from "@mailroom/pipeline/subjects.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { DeliverySource, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { parseVerpAddress } from "@mailroom/content/verp.js";
import { compileMessage } from "@mailroom/content/compile/compile.js";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import {
  startDeliveryUnderTest, deliveryEnv, headerOf, listenEvents, publishJob, SECRET, startNeighbours, tempDir, publishPage, putContents, type Neighbours,
} from "./support.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";

describe("delivery service (JetStream → SMTP)", () => {
  const contents = new Map<string, CompiledMessage>();
  let nats: NatsHandle;
  let sink: SmtpSink;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
  let client: Client<typeof DeliveryService>;
  let events: ReturnType<typeof listenEvents>;
  let data: Awaited<ReturnType<typeof tempDir>>;
  const behaviours = new Map<string, SinkBehaviour[]>();
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const dkimTxt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`;

  beforeAll(async () => {
    [nats, sink, neighbours, data] = await Promise.all([startNats(), startSmtpSink(), startNeighbours(), tempDir("mailroom-delivery-")]);
    // Per recipient: a queue of answers, then accept.
    sink.setBehaviour((raw) => {
      const to = /^To: (.*)$/m.exec(raw)?.[1]?.trim() ?? "";
      return behaviours.get(to)?.shift() ?? { kind: "accept" };
    });
    contents.set("ws_acme/email:trs_1", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>", workspaceId: "ws_acme" }));
    // Compiled by the real renderer, as the broadcast service would: tracked links, footer, preheader.
    contents.set(
      "ws_acme/broadcast:cmp_news",
      compileMessage(
        {
          subject: "Grüße, {{firstName}} ✓", previewText: "Inside: the autumn news",
          html: '<html><body><p>News for {{firstName}}</p><a href="https://acme.test/read">Read</a></body></html>',
          text: "", trackClicks: true, trackOpens: false, kind: ContentKind.BROADCAST, contentId: "cmp_news", workspaceId: "ws_acme",
        },
        { secret: SECRET, publicUrl: "https://mail.acme.test" },
      ),
    );
    neighbours.senders.set("ws_acme/news@acme.test", {
      address: "news@acme.test",
      dkim: { domain: "acme.test", selector: "mr2024", privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
    });
    nc = await connectNats(nats.url, "delivery-suite");
    await ensureMailStreams(nc);
    await putContents(nc, contents);
    events = listenEvents(nc);
    delivery = await startDeliveryUnderTest(nc, deliveryEnv({ natsUrl: nats.url, smtpUrl: sink.url, dataDir: data.dir, neighboursUrl: neighbours.url }),);
    client = delivery.client;
  });

  afterAll(async () => {
    await delivery?.stop();
    events?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), sink?.stop(), neighbours?.stop()]);
    await data?.remove();
  });

  const received = (to: string) => sink.messages.filter((m) => m.to.includes(to));
  const typesOf = (id: string) => events.of(id).map((e) => MailEventType[e.type]);

  it("retries a 4xx with backoff, then delivers (DEFERRED then SENT)", async () => {
    behaviours.set("r1@example.test", [{ kind: "reject", code: 451, message: "greylisted" }]);
    await publishJob(nc, { deliveryId: "dlv_r1", to: "r1@example.test" });
    await events.waitFor(() => typesOf("dlv_r1").includes("SENT"));
    expect(typesOf("dlv_r1")).toEqual(["DEFERRED", "SENT"]);
    const [deferred, sent] = events.of("dlv_r1");
    expect(deferred).toMatchObject({ smtpCode: 451, attempt: 1, source: DeliverySource.TRANSACTIONAL, emailId: "trs_1" });
    expect(deferred.detail).toMatch(/greylisted/);
    expect(sent).toMatchObject({ smtpCode: 250, attempt: 2, recipient: "r1@example.test", messageId: "dlv_r1@acme.test" });
    expect(received("r1@example.test")).toHaveLength(1);
    // Transactional mail leaves with the delivery's VERP return path too.
    expect(parseVerpAddress(SECRET, received("r1@example.test")[0].from)).toEqual({ deliveryId: "dlv_r1", domain: "bounces.acme.test" });
  });

  it("survives a connection dropped mid-DATA, then delivers", async () => {
    behaviours.set("r2@example.test", [{ kind: "drop" }]);
    await publishJob(nc, { deliveryId: "dlv_r2", to: "r2@example.test" });
    await events.waitFor(() => typesOf("dlv_r2").includes("SENT"));
    expect(typesOf("dlv_r2")).toEqual(["DEFERRED", "SENT"]);
    expect(events.of("dlv_r2")[0].smtpCode).toBe(0);
    expect(received("r2@example.test")).toHaveLength(1);
  });

  it("turns a 5xx into a permanent BOUNCED event (the audience unit suppresses from it; delivery does not call it)", async () => {
    behaviours.set("gone@example.test", [{ kind: "reject", code: 550, message: "5.1.1 mailbox unavailable" }]);
    await publishJob(nc, { deliveryId: "dlv_bounce", to: "gone@example.test" });
    await events.waitFor(() => typesOf("dlv_bounce").length > 0);
    expect(typesOf("dlv_bounce")).toEqual(["BOUNCED"]);
    expect(events.of("dlv_bounce")[0]).toMatchObject({ smtpCode: 550, permanent: true, recipient: "gone@example.test" });
    expect(neighbours.suppressions.filter((s) => s.email === "gone@example.test")).toEqual([]);
    expect(received("gone@example.test")).toHaveLength(0);
  });

  it("signs broadcast mail with DKIM covering the List-Unsubscribe pair, and encodes non-ASCII headers", async () => {
    await publishJob(nc, {
      deliveryId: "dlv_dkim",
      to: "zoe@example.test",
      source: DeliverySource.BROADCAST,
      broadcastId: "cmp_news",
      contentRef: "broadcast:cmp_news",
      fromName: "Café Ünïcode",
      replyTo: "Ré Ply <reply@acme.test>",
      variables: { firstName: "Zoë" },
    });
    await events.waitFor(() => typesOf("dlv_dkim").includes("SENT"));
    const [msg] = received("zoe@example.test");
    const raw = msg.raw;

    const listUnsub = headerOf(raw, "List-Unsubscribe") ?? "";
    // The renderer's token is longer than a mailbox local part may be: it rides in the subject.
    expect(listUnsub).toMatch(/^<https:\/\/mail\.acme\.test\/u\/([A-Za-z0-9_.-]+)>, <mailto:unsubscribe@bounces\.acme\.test\?subject=unsubscribe%20\1>$/);
    // The envelope sender is the delivery's VERP return path on the sender's bounce subdomain.
    expect(msg.from).toMatch(/^bounces\+[a-z2-7]+@bounces\.acme\.test$/);
    expect(parseVerpAddress(SECRET, msg.from)).toEqual({ deliveryId: "dlv_dkim", domain: "bounces.acme.test" });
    expect(headerOf(raw, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    expect(headerOf(raw, "X-Mailroom-Delivery-Id")).toBe("dlv_dkim");
    expect(headerOf(raw, "Message-ID")).toBe("<dlv_dkim@acme.test>");
    // The long header was folded on the wire, and the signature still holds.
    expect(raw).toMatch(/List-Unsubscribe:[^\r\n]*\r?\n[ \t]/);

    const resolver = async (name: string, type: string) => {
      if (type === "TXT" && name === "mr2024._domainkey.acme.test") return [[dkimTxt]];
      throw Object.assign(new Error(`no ${type} for ${name}`), { code: "ENOTFOUND" });
    };
    const verified = await dkimVerify(Buffer.from(raw), { resolver });
    expect(verified.results).toHaveLength(1);
    const sig = verified.results[0];
    expect(sig.status.result).toBe("pass");
    expect(sig.signingDomain).toBe("acme.test");
    const hTag = /(?:^|;)\s*h=([^;]+)/.exec(headerOf(raw, "DKIM-Signature") ?? "")?.[1] ?? "";
    const signedHeaders = hTag.toLowerCase().split(":").map((h) => h.trim());
    expect(signedHeaders).toEqual(expect.arrayContaining(["list-unsubscribe", "list-unsubscribe-post", "from", "subject", "to"]));

    // Tampering with the one-click header breaks the signature.
    const tampered = raw.replace("List-Unsubscribe-Post: List-Unsubscribe=One-Click", "List-Unsubscribe-Post: List-Unsubscribe=Two-Click");
    expect((await dkimVerify(Buffer.from(tampered), { resolver })).results[0].status.result).toBe("fail");

    // Non-ASCII: encoded words on the wire, the right text once decoded.
    expect(headerOf(raw, "Subject")).toMatch(/^=\?UTF-8\?/i);
    expect(headerOf(raw, "From")).toMatch(/=\?UTF-8\?.*\?= <news@acme\.test>/i);
    const parsed = await PostalMime.parse(raw);
    expect(parsed.subject).toBe("Grüße, Zoë ✓");
    expect(parsed.from).toMatchObject({ name: "Café Ünïcode", address: "news@acme.test" });
    expect(parsed.replyTo?.[0]).toMatchObject({ name: "Ré Ply", address: "reply@acme.test" });
    expect(parsed.html).toContain("News for Zoë");
    expect(parsed.html).toContain("Inside: the autumn news"); // the preheader, from the content
    expect(parsed.html).toMatch(/href="https:\/\/mail\.acme\.test\/t\/c\/[^"]+"/); // tracked link
    const unsubscribeUrl = /^<([^>]+)>/.exec(listUnsub)?.[1] ?? "";
    expect(parsed.html).toContain(unsubscribeUrl); // the footer's link is the List-Unsubscribe one
  });

  it("delivers a broadcast's page job: every recipient once, with its own values, a greylisted one retried as a job of its own", async () => {
    const recipients = Array.from({ length: 30 }, (_, i) => ({
      deliveryId: `dlv_page_${i}`, messageId: `dlv_page_${i}@acme.test`, email: `page${i}@example.test`, contactId: `ctc_page_${i}`,
      variablesJson: new TextEncoder().encode(JSON.stringify({ firstName: `P${i}` })),
    }));
    behaviours.set("page7@example.test", [{ kind: "reject", code: 451, message: "greylisted" }]);
    await publishPage(nc, { pageId: "pg_news_1", broadcastId: "cmp_news", contentRef: "broadcast:cmp_news", recipients });
    await events.waitFor(() => recipients.every((r) => typesOf(r.deliveryId).includes("SENT")));
    expect(typesOf("dlv_page_7")).toEqual(["DEFERRED", "SENT"]);
    expect(events.of("dlv_page_7").map((e) => e.attempt)).toEqual([1, 2]);
    for (const r of recipients) expect(received(r.email)).toHaveLength(1);
    const parsed = await PostalMime.parse(received("page12@example.test")[0].raw);
    expect(parsed.subject).toBe("Grüße, P12 ✓");
    expect(events.of("dlv_page_3")[0]).toMatchObject({ source: DeliverySource.BROADCAST, broadcastId: "cmp_news", messageId: "dlv_page_3@acme.test" });
    await drained(nc);
  });

  it("never sends a delivery twice when its job comes again", async () => {
    await publishJob(nc, { deliveryId: "dlv_once", to: "once@example.test" });
    await events.waitFor(() => typesOf("dlv_once").includes("SENT"));
    // A second copy of the same job, past JetStream's msgID dedupe (other msgID).
    await publishJob(nc, { deliveryId: "dlv_once", to: "once@example.test" }, "dlv_once-copy");
    await events.waitFor(() => typesOf("dlv_once").length >= 2);
    await drained(nc);
    expect(received("once@example.test")).toHaveLength(1);
    const [first, again] = events.of("dlv_once");
    expect(again.eventId).toBe(first.eventId); // republished outcome: same id, deduped downstream
  });

  it("holds a paused broadcast's jobs across processes until it is resumed", async () => {
    await client.pauseBroadcast({ broadcastId: "cmp_news" });
    expect((await client.getStatus({})).pausedBroadcasts).toContain("cmp_news");
    await publishJob(nc, { deliveryId: "dlv_paused", to: "paused@example.test", source: DeliverySource.BROADCAST, broadcastId: "cmp_news", contentRef: "broadcast:cmp_news" });
    await new Promise((r) => setTimeout(r, 700));
    expect(received("paused@example.test")).toHaveLength(0);
    await client.resumeBroadcast({ broadcastId: "cmp_news" });
    await events.waitFor(() => typesOf("dlv_paused").includes("SENT"));
    expect(received("paused@example.test")).toHaveLength(1);
  });

  it("reports FAILED for content that does not exist and for a sender the workspace may not use", async () => {
    await publishJob(nc, { deliveryId: "dlv_nocontent", to: "a@example.test", contentRef: "email:trs_missing" });
    await publishJob(nc, { deliveryId: "dlv_badsender", to: "b@example.test", fromEmail: "ceo@other.test" });
    await events.waitFor(() => events.of("dlv_nocontent").length > 0 && events.of("dlv_badsender").length > 0);
    expect(events.of("dlv_nocontent")[0]).toMatchObject({ type: MailEventType.FAILED });
    expect(events.of("dlv_nocontent")[0].detail).toMatch(/not found/);
    expect(events.of("dlv_badsender")[0]).toMatchObject({ type: MailEventType.FAILED, detail: "sender not allowed for this workspace" });
    expect(received("a@example.test").length + received("b@example.test").length).toBe(0);
  });

  it("answers status and admin calls, and refuses bad input with InvalidArgument", async () => {
    await client.setWorkspaceRate({ workspaceId: "ws_slow", messagesPerSecond: 5 });
    const status = await client.getStatus({});
    expect(status.relay).toBe(sink.url + "");
    expect(status.capturing).toBe(false);
    expect(status.sentTotal).toBeGreaterThan(0n);
    expect(status.workspaceRates).toContainEqual(expect.objectContaining({ workspaceId: "ws_slow", messagesPerSecond: 5 }));
    await client.setWorkspaceRate({ workspaceId: "ws_slow", messagesPerSecond: 0 });
    expect((await client.getStatus({})).workspaceRates).toEqual([]);
    for (const call of [
      () => client.setWorkspaceRate({ workspaceId: "ws_slow", messagesPerSecond: -1 }),
      () => client.setWorkspaceRate({ workspaceId: "ws.>", messagesPerSecond: 1 }),
      () => client.pauseBroadcast({ broadcastId: "" }),
      () => client.getCapturedMessage({ id: "../../etc/passwd" }),
    ]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect([Code.InvalidArgument, Code.NotFound]).toContain((err as ConnectError).code);
    }
  });
});

/** Waits until the work queue holds no job (all acked). */
async function drained(nc: NatsConnection, timeoutMs = 10_000): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const deadline = Date.now() + timeoutMs;
  while ((await jsm.streams.info(DELIVERY_STREAM)).state.messages > 0) {
    if (Date.now() > deadline) throw new Error("delivery queue did not drain");
    await new Promise((r) => setTimeout(r, 50));
  }
}
