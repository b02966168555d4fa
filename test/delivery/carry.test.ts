/**
 * DESIGN §9.5 in delivery: what an email carries (cc, bcc, custom headers, attachments,
 * inline images, tags) from the content store and the job to the wire, against a real
 * nats-server, the real SMTP sink, and the webhooks unit for the tags' last stop.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { dkimVerify } from "mailauth";
import PostalMime from "postal-mime";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectClient, createLogger, loadConfig } from "@mailroom/kit";
import { connectNats, publishProto } from "@mailroom/kit/jetstream.js";
import { ContentStore, type ContentExtras } from "@mailroom/pipeline/content-store.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { deliveryJobSubject } from "@mailroom/pipeline/subjects.js";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { DeliveryJobSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { TagSchema } from "@mailroom/proto/common/v1/common_pb.js";
import { WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { attachmentEncodings } from "../../services/delivery/src/adapters/attachment-parts.js";
import { startWebhooks, type RunningWebhooks } from "../../services/webhooks/src/main.js";
import { loadWebhooksSettings } from "../../services/webhooks/src/settings.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { startSmtpSink, type SinkBehaviour, type SmtpSink } from "../harness/smtp-sink.js";
import { startReceiver } from "../webhooks/receiver.js";
import { deliveryEnv, deliveryJob, headerOf, listenEvents, startDeliveryUnderTest, startNeighbours, tempDir, type Neighbours } from "./support.js";

const compiled = (html: string) =>
  create(CompiledMessageSchema, { html: { segments: [{ part: { case: "literal", value: html } }] }, kind: ContentKind.TRANSACTIONAL, contentId: "trs_c", workspaceId: "ws_acme" });

/** DESIGN §9.5 on a real nats-server: what an email carries reaches the content store and comes back whole. */
describe("content store: what an email carries", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let store: ContentStore;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "carry-content-store");
    store = await ContentStore.open(nc, { replicas: 1 });
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("keeps 10 MB of attachments (stored in parts), the Cc header and custom headers beside the compiled message", async () => {
    const big = randomBytes(6 * 1024 * 1024);
    const small = randomBytes(4 * 1024 * 1024);
    await store.put("ws_acme", "email:trs_big", compiled("<p>invoice</p>"), {
      cc: ["Bo <bo@example.net>", "cy@example.net"],
      headers: [{ name: "X-Ticket", value: "42" }, { name: "X-Other", value: "b" }],
      attachments: [
        { filename: "a.bin", content: big, contentType: "application/octet-stream" },
        { filename: "b.pdf", content: small, contentType: "application/pdf", contentId: "" },
      ],
    });
    const back = await store.getStored("ws_acme", "email:trs_big");
    expect(back?.compiled?.html?.segments[0]?.part.value).toBe("<p>invoice</p>");
    expect(back?.cc).toEqual(["Bo <bo@example.net>", "cy@example.net"]);
    expect(back?.headers.map((h) => [h.name, h.value])).toEqual([["X-Ticket", "42"], ["X-Other", "b"]]);
    expect(back?.attachments.map((a) => a.filename)).toEqual(["a.bin", "b.pdf"]);
    expect(Buffer.from(back!.attachments[0].content).equals(big)).toBe(true);
    expect(Buffer.from(back!.attachments[1].content).equals(small)).toBe(true);
    // The compiled message alone, as before.
    expect((await store.get("ws_acme", "email:trs_big"))?.html?.segments[0]?.part.value).toBe("<p>invoice</p>");
    await store.delete("ws_acme", "email:trs_big");
    expect(await store.getStored("ws_acme", "email:trs_big")).toBeUndefined();
  }, 30_000);

  it("stores content without extras as before (StoredContent with no cc, headers or attachments)", async () => {
    await store.put("ws_acme", "email:trs_plain", compiled("<p>x</p>"));
    const back = await store.getStored("ws_acme", "email:trs_plain");
    expect(back?.cc).toEqual([]);
    expect(back?.attachments).toEqual([]);
  });
});

describe("delivery: what an email carries, on the wire", () => {
  let nats: NatsHandle;
  let sink: SmtpSink;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let store: ContentStore;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
  let webhooks: RunningWebhooks;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let events: ReturnType<typeof listenEvents>;
  let data: Awaited<ReturnType<typeof tempDir>>;
  let hooksData: Awaited<ReturnType<typeof tempDir>>;
  const behaviours = new Map<string, SinkBehaviour[]>();
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const dkimTxt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`;
  const resolver = async (name: string, type: string) => {
    if (type === "TXT" && name === "mr2024._domainkey.acme.test") return [[dkimTxt]];
    throw Object.assign(new Error(`no ${type} for ${name}`), { code: "ENOTFOUND" });
  };

  const pdf = randomBytes(300 * 1024);
  const logo = randomBytes(20 * 1024);
  const csv = Buffer.from("id,amount\r\n1,10.00\r\n.dot line\r\n");
  const extras: ContentExtras = {
    cc: ["Bo Bell <bo@example.net>", "cy@example.net"],
    headers: [
      { name: "X-Ticket", value: "T-42" },
      { name: "X-Entity-Ref-ID", value: "inv-2026-11" },
      // Names the system sets never reach the message, whatever reached the store.
      { name: "X-Mailroom-Delivery-Id", value: "forged" },
      { name: "Bcc", value: "leak@example.org" },
    ],
    attachments: [
      { filename: "invoice 2026-11.pdf", content: pdf, contentType: "application/pdf" },
      { filename: "logo.png", content: logo, contentType: "image/png", contentId: "logo@acme" },
      { filename: "lines.csv", content: csv, contentType: "" },
    ],
  };

  beforeAll(async () => {
    [nats, sink, neighbours, data, hooksData, receiver] = await Promise.all([
      startNats(), startSmtpSink(), startNeighbours(), tempDir("mailroom-carry-"), tempDir("mailroom-carry-hooks-"), startReceiver(),
    ]);
    sink.setBehaviour((raw) => behaviours.get(/^To: (.*)$/m.exec(raw)?.[1]?.trim() ?? "")?.shift() ?? { kind: "accept" });
    neighbours.senders.set("ws_acme/news@acme.test", {
      address: "news@acme.test",
      dkim: { domain: "acme.test", selector: "mr2024", privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
    });
    nc = await connectNats(nats.url, "carry-suite");
    await ensureMailStreams(nc);
    store = await ContentStore.open(nc, { replicas: 1 });
    const html = '<p>Your invoice, {{firstName}}</p><img src="cid:logo@acme" alt="Acme">';
    for (const id of ["trs_inv", "trs_retry"]) {
      await store.put("ws_acme", `email:${id}`, compiledFrom({ subject: "Invoice", html, text: "Your invoice", workspaceId: "ws_acme" }), extras);
    }
    events = listenEvents(nc);
    delivery = await startDeliveryUnderTest(nc, deliveryEnv({ natsUrl: nats.url, smtpUrl: sink.url, dataDir: data.dir, neighboursUrl: neighbours.url }));
    const hooksEnv = {
      MAILROOM_NATS_URL: nats.url, MAILROOM_DATA_DIR: hooksData.dir, MAILROOM_SERVICE_PORT: "0",
      MAILROOM_WEBHOOKS_POLL_MS: "50", MAILROOM_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8,::1/128",
    };
    webhooks = await startWebhooks(loadConfig(hooksEnv), loadWebhooksSettings(hooksEnv), createLogger("webhooks", "warn"));
    await connectClient(WebhookService, webhooks.url).createWebhook({ workspaceId: "ws_acme", url: receiver.url, events: ["EMAIL_DELIVERED", "EMAIL_DEFERRED"] });
  }, 60_000);

  afterAll(async () => {
    await delivery?.stop();
    await webhooks?.stop();
    events?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), sink?.stop(), neighbours?.stop(), receiver?.close()]);
    await Promise.all([data?.remove(), hooksData?.remove()]);
  });

  const TAGS = [{ name: "category", value: "invoice" }, { name: "tenant", value: "t-42" }];

  async function publish(deliveryId: string, to: string, contentRef: string, extra: { cc?: string[]; bcc?: string[]; tags?: typeof TAGS; content?: Uint8Array }) {
    const job = deliveryJob({ deliveryId, to, contentRef });
    if (extra.content) job.content = extra.content;
    job.cc = extra.cc ?? [];
    job.bcc = extra.bcc ?? [];
    job.tags = (extra.tags ?? []).map((t) => create(TagSchema, t));
    await publishProto(jetstream(nc), deliveryJobSubject("transactional", ""), DeliveryJobSchema, job, deliveryId);
  }
  const typesOf = (id: string) => events.of(id).map((e) => MailEventType[e.type]);
  const bytesOf = (c: ArrayBuffer | Uint8Array | string) => Buffer.from(typeof c === "string" ? Buffer.from(c, "base64") : new Uint8Array(c as ArrayBuffer));

  it("sends one transaction to to + cc + bcc with the attachments, the inline image, Cc, custom headers, no Bcc; DKIM verifies", async () => {
    // One cc is refused for good at RCPT TO: the others still get the message, that address is suppressed.
    sink.setRecipientFault((r) => (r === "cy@example.net" ? { code: 550, message: "5.1.1 no such user" } : undefined));
    const before = attachmentEncodings.count;
    await publish("dlv_inv", "ann@example.test", "email:trs_inv", { cc: ["bo@example.net", "cy@example.net"], bcc: ["audit@example.org"], tags: TAGS });
    await events.waitFor(() => typesOf("dlv_inv").includes("SENT"));
    sink.setRecipientFault(undefined);
    expect(typesOf("dlv_inv")).toEqual(["SENT"]);

    const got = sink.messages.filter((m) => m.to.includes("ann@example.test"));
    expect(got).toHaveLength(1);
    // RCPT TO: to, then cc and bcc; the refused cc left out by the relay.
    expect(got[0].to).toEqual(["ann@example.test", "bo@example.net", "audit@example.org"]);
    expect(neighbours.suppressions).toEqual([expect.objectContaining({ workspaceId: "ws_acme", email: "cy@example.net" })]);
    expect(attachmentEncodings.count - before).toBe(3);

    const raw = got[0].raw;
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(raw).not.toContain("audit@example.org");
    expect(raw).not.toContain("leak@example.org");
    expect(headerOf(raw, "Cc")).toBe("Bo Bell <bo@example.net>, cy@example.net");
    expect(headerOf(raw, "X-Ticket")).toBe("T-42");
    expect(headerOf(raw, "X-Entity-Ref-ID")).toBe("inv-2026-11");
    expect(headerOf(raw, "X-Mailroom-Delivery-Id")).toBe("dlv_inv");
    expect(raw.match(/^X-Mailroom-Delivery-Id:/gim)).toHaveLength(1);
    expect(headerOf(raw, "Content-Type")).toMatch(/^multipart\/mixed;/);

    const parsed = await PostalMime.parse(raw);
    expect(parsed.cc).toEqual([{ name: "Bo Bell", address: "bo@example.net" }, { name: "", address: "cy@example.net" }]);
    expect(parsed.html).toContain('src="cid:logo@acme"');
    expect(parsed.text?.trim()).toBe("Your invoice");
    const byName = new Map(parsed.attachments.map((a) => [a.filename, a]));
    expect([...byName.keys()].sort()).toEqual(["invoice 2026-11.pdf", "lines.csv", "logo.png"]);
    const inv = byName.get("invoice 2026-11.pdf")!;
    expect(inv).toMatchObject({ mimeType: "application/pdf", disposition: "attachment" });
    expect(bytesOf(inv.content).equals(pdf)).toBe(true);
    const img = byName.get("logo.png")!;
    expect(img).toMatchObject({ mimeType: "image/png", disposition: "inline", contentId: "<logo@acme>", related: true });
    expect(bytesOf(img.content).equals(logo)).toBe(true);
    const lines = byName.get("lines.csv")!;
    // No content type given: taken from the extension; a line starting with a dot survives dot-stuffing.
    expect(lines.mimeType).toBe("text/csv");
    expect(bytesOf(lines.content).equals(csv)).toBe(true);
    // The inline image sits in multipart/related with the bodies, the attachments beside it.
    expect(raw).toMatch(/Content-Type: multipart\/related; type="multipart\/alternative";/);

    const verified = await dkimVerify(Buffer.from(raw), { resolver });
    expect(verified.results).toHaveLength(1);
    expect(verified.results[0].status.result).toBe("pass");
    const hTag = /(?:^|;)\s*h=([^;]+)/.exec(headerOf(raw, "DKIM-Signature") ?? "")?.[1] ?? "";
    expect(hTag.toLowerCase().split(":").map((h) => h.trim())).toContain("cc");
    // A byte of an attachment changed: the signature fails.
    const at = raw.indexOf("Content-Disposition: attachment");
    const nl = raw.indexOf("\r\n\r\n", at) + 4;
    const tampered = raw.slice(0, nl) + (raw[nl] === "A" ? "B" : "A") + raw.slice(nl + 1);
    const broken = (await dkimVerify(Buffer.from(tampered), { resolver })).results[0].status;
    // mailauth calls a body hash mismatch "neutral" (RFC 6376 §6.1.3 lets a verifier treat it as no signature).
    expect(broken.result).not.toBe("pass");
    expect(broken.comment).toMatch(/body hash/);

    // Tags on the event and in the webhook's data.
    expect(events.of("dlv_inv")[0].tags.map((t) => ({ name: t.name, value: t.value }))).toEqual(TAGS);
    // The other envelope recipients, so that a later bounce report naming a cc is told apart (inbound).
    expect(events.of("dlv_inv")[0].otherRecipients).toEqual(["bo@example.net", "cy@example.net", "audit@example.org"]);
    await waitUntil(() => receiver.received.some((r) => r.event.type === "EMAIL_DELIVERED" && r.event.data.emailId === "trs_1"));
    const hook = receiver.received.find((r) => r.event.type === "EMAIL_DELIVERED")!;
    expect(hook.event.data.tags).toEqual(TAGS);
  }, 30_000);

  it("retries a 4xx with the attachment parts encoded once (DEFERRED then SENT), tags on both events", async () => {
    behaviours.set("rita@example.test", [{ kind: "reject", code: 451, message: "4.7.1 try later" }]);
    const before = attachmentEncodings.count;
    const attemptsBefore = sink.attempts;
    await publish("dlv_retry", "rita@example.test", "email:trs_retry", { cc: ["bo@example.net"], tags: TAGS });
    await events.waitFor(() => typesOf("dlv_retry").includes("SENT"));
    expect(typesOf("dlv_retry")).toEqual(["DEFERRED", "SENT"]);
    expect(sink.attempts - attemptsBefore).toBe(2);
    // Three attachments, encoded for the first attempt only: the retry reused the parts.
    expect(attachmentEncodings.count - before).toBe(3);
    for (const e of events.of("dlv_retry")) expect(e.tags.map((t) => t.name)).toEqual(["category", "tenant"]);
    const got = sink.messages.filter((m) => m.to.includes("rita@example.test"));
    expect(got).toHaveLength(1);
    expect(got[0].to).toEqual(["rita@example.test", "bo@example.net"]);
    const parsed = await PostalMime.parse(got[0].raw);
    expect(bytesOf(parsed.attachments.find((a) => a.filename === "invoice 2026-11.pdf")!.content).equals(pdf)).toBe(true);
    expect((await dkimVerify(Buffer.from(got[0].raw), { resolver })).results[0].status.result).toBe("pass");
    await waitUntil(() => receiver.received.some((r) => r.event.type === "EMAIL_DEFERRED"));
    expect(receiver.received.find((r) => r.event.type === "EMAIL_DEFERRED")!.event.data.tags).toEqual(TAGS);
  }, 30_000);

  it("sends a job that carries its content (small content: nothing in the content store), its Cc header included", async () => {
    const content = await store.place("ws_acme", "email:trs_carried", compiledFrom({ subject: "Carried", html: "<p>In the job</p>", workspaceId: "ws_acme" }), {
      cc: ["Kim <kim@example.test>"], headers: [], attachments: [],
    });
    expect(content, "small content is carried").toBeDefined();
    expect(await store.get("ws_acme", "email:trs_carried")).toBeUndefined();
    await publish("dlv_carried", "carried@example.test", "email:trs_carried", { content, cc: ["kim@example.test"] });
    await events.waitFor(() => typesOf("dlv_carried").includes("SENT"));
    const got = sink.messages.find((m) => m.to.includes("carried@example.test"))!;
    expect(got.to.sort()).toEqual(["carried@example.test", "kim@example.test"]);
    expect(headerOf(got.raw, "Subject")).toBe("Carried");
    expect(headerOf(got.raw, "Cc")).toBe("Kim <kim@example.test>");
    // Bytes that do not decode fail that delivery for good, not the queue.
    await publish("dlv_garbled", "garbled@example.test", "email:trs_garbled", { content: new Uint8Array([0x0a, 0xff, 0xff]) });
    await events.waitFor(() => typesOf("dlv_garbled").includes("FAILED"));
  });

  it("sends a job without cc, bcc or tags and content without extras as before", async () => {
    await store.put("ws_acme", "email:trs_bare", compiledFrom({ subject: "Hi", html: "<p>Hi</p>", workspaceId: "ws_acme" }));
    await publish("dlv_bare", "bare@example.test", "email:trs_bare", {});
    await events.waitFor(() => typesOf("dlv_bare").includes("SENT"));
    const got = sink.messages.find((m) => m.to.includes("bare@example.test"))!;
    expect(got.to).toEqual(["bare@example.test"]);
    expect(headerOf(got.raw, "Cc")).toBeUndefined();
    expect(headerOf(got.raw, "Content-Type")).toMatch(/^multipart\/alternative;/);
    expect(events.of("dlv_bare")[0].tags).toEqual([]);
  });
});

async function waitUntil(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
