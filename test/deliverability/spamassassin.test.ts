/**
 * Deliverability, measured: every kind of message Mailroom sends goes through the real
 * pipeline (renderer compile → delivery service over JetStream → SMTP sink, DKIM-signed for
 * a verified domain) and is scored by SpamAssassin with local rules only (`spamassassin -L
 * -t`). Each must score at most 1.0 of the default 5.0. Skipped when `spamassassin` is not
 * installed (.ci/run installs it).
 *
 * What fires today, all 0 points: HTML_MESSAGE (there is an HTML part), NO_RECEIVED and
 * NO_RELAYS (captured before any relay added a Received line). The open beacon once added
 * HTML_IMAGE_ONLY_* (up to 2.8) to every short tracked message: see pixelPieces in
 * services/content/src/compile/snippets.ts for why it is no longer an <img> to the filter.
 */
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import PostalMime from "postal-mime";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { startSmtpSink, type SmtpSink } from "../harness/smtp-sink.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DeliverySource, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compileMessage, type CompileInput } from "@mailroom/content/compile/compile.js";
import { startDeliveryUnderTest, deliveryEnv, listenEvents, publishJob, putContent, SECRET, startNeighbours, tempDir, type Neighbours } from "../delivery/support.js";
import { optionalProgram } from "../harness/programs.js";

const MAX_SCORE = 1.0;

const available = optionalProgram("spamassassin", "test/deliverability");

/** Score and the rules that fired, from `spamassassin -L -t` (local tests only, report appended). */
function score(raw: string): Promise<{ score: number; rules: string[]; report: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile("spamassassin", ["-L", "-t"], { maxBuffer: 8 * 1024 * 1024, timeout: 30_000 }, (err, stdout) => {
      if (err) return reject(err);
      const status = /^X-Spam-Status: .*?score=(-?[\d.]+)[\s\S]*?tests=([^\n]*(?:\n\s+[^\n]*)*)/m.exec(stdout);
      if (!status) return reject(new Error(`no X-Spam-Status in spamassassin output:\n${stdout.slice(0, 2000)}`));
      const rules = status[2].split(/[,\s]+/).map((r) => r.replace(/autolearn=.*|version=.*/, "")).filter((r) => /^[A-Z0-9_]+$/.test(r));
      const report = stdout.slice(stdout.lastIndexOf("Content analysis details"));
      resolve({ score: Number(status[1]), rules, report });
    });
    child.stdin!.end(raw);
  });
}

const ORDER_HTML =
  '<p>Hi Ann,</p><p>Thanks for your order #10472. We will let you know when it ships.</p>' +
  '<p><a href="https://shop.acme.test/orders/10472">View your order</a></p><p>The Acme team</p>';

const KINDS: Array<{ name: string; source: DeliverySource; ref: string; input: Omit<CompileInput, "workspaceId" | "contentId" | "kind"> }> = [
  {
    name: "raw transactional with open and click tracking",
    source: DeliverySource.TRANSACTIONAL,
    ref: "email:trs_raw",
    input: { subject: "Your order #10472", previewText: "", html: ORDER_HTML, text: "", trackOpens: true, trackClicks: true, literal: true },
  },
  {
    name: "templated transactional (variables, tracking)",
    source: DeliverySource.TRANSACTIONAL,
    ref: "email:trs_tpl",
    input: {
      subject: "Welcome to Acme, {{firstName}}",
      previewText: "Your account is ready",
      html:
        "<h1>Welcome, {{firstName}}!</h1><p>Your Acme account is ready. Sign in any time to manage your orders and settings.</p>" +
        '<p><a href="https://app.acme.test/login">Sign in</a></p><p>Questions? Just reply to this email.</p>',
      text: "",
      trackOpens: true,
      trackClicks: true,
    },
  },
  {
    name: "broadcast with footer and List-Unsubscribe",
    source: DeliverySource.BROADCAST,
    ref: "broadcast:cmp_news",
    input: {
      subject: "Acme autumn news, {{firstName}}",
      previewText: "Three new things this autumn",
      html:
        "<html><body><h1>Autumn at Acme</h1><p>Hi {{firstName}}, here is what is new this season.</p>" +
        "<p>We opened a second warehouse, so most orders now ship the same day. Our winter catalogue is online, " +
        "and the repair service now covers every product we sell.</p>" +
        '<p><a href="https://acme.test/news/autumn">Read the full story</a></p></body></html>',
      text: "",
      trackOpens: true,
      trackClicks: true,
    },
  },
];

describe.skipIf(!available)("deliverability: SpamAssassin scores of what Mailroom sends", () => {
  let nats: NatsHandle;
  let sink: SmtpSink;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let data: Awaited<ReturnType<typeof tempDir>>;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
  let events: ReturnType<typeof listenEvents>;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });

  beforeAll(async () => {
    [nats, sink, neighbours, data] = await Promise.all([startNats(), startSmtpSink(), startNeighbours(), tempDir("mailroom-deliverability-")]);
    neighbours.senders.set("ws_acme/news@acme.test", {
      address: "news@acme.test",
      name: "Acme",
      dkim: { domain: "acme.test", selector: "mr2024", privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
    });
    nc = await connectNats(nats.url, "deliverability-test");
    await ensureMailStreams(nc);
    // As the accepting unit does: the compiled content is in the content store before any job names it.
    for (const kind of KINDS) {
      const id = kind.ref.split(":")[1];
      const contentKind = kind.source === DeliverySource.BROADCAST ? ContentKind.BROADCAST : ContentKind.TRANSACTIONAL;
      const compiled = compileMessage({ ...kind.input, kind: contentKind, contentId: id, workspaceId: "ws_acme" }, { secret: SECRET, publicUrl: "https://mail.acme.test" });
      await putContent(nc, "ws_acme", kind.ref, compiled);
    }
    events = listenEvents(nc);
    delivery = await startDeliveryUnderTest(nc, deliveryEnv({ natsUrl: nats.url, smtpUrl: sink.url, dataDir: data.dir, neighboursUrl: neighbours.url }));
  }, 30_000);

  afterAll(async () => {
    await delivery?.stop();
    events?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), sink?.stop(), neighbours?.stop()]);
    await data?.remove();
  });

  it.each(KINDS.map((k, i) => [k.name, k, i] as const))("%s scores at most 1.0", async (_name, kind, i) => {
    const deliveryId = `dlv_sa_${i}`;
    const to = `ann${i}@example.test`;
    await publishJob(nc, {
      deliveryId,
      to,
      source: kind.source,
      contentRef: kind.ref,
      broadcastId: kind.source === DeliverySource.BROADCAST ? "cmp_news" : "",
      variables: { firstName: "Ann" },
    });
    await events.waitFor(() => events.of(deliveryId).some((e) => e.type === MailEventType.SENT));
    const message = sink.messages.find((m) => m.to.includes(to))!;
    // What is scored is the real thing: signed, tracked, with a text part, unsubscribe headers on broadcasts.
    const parsed = await PostalMime.parse(message.raw);
    expect(parsed.headers.some((h) => h.key === "dkim-signature")).toBe(true);
    expect(parsed.html).toContain("https://mail.acme.test/t/o/");
    expect(parsed.html).toContain("https://mail.acme.test/t/c/");
    expect(parsed.text?.trim()).toBeTruthy();
    expect(parsed.headers.some((h) => h.key === "list-unsubscribe")).toBe(kind.source === DeliverySource.BROADCAST);
    const result = await score(message.raw);
    console.info(`spamassassin -L: ${kind.name}: ${result.score} (${result.rules.join(", ")})`);
    expect(result.score, `${kind.name}: ${result.rules.join(", ")}\n${result.report}\n--- message ---\n${message.raw.slice(0, 4000)}`).toBeLessThanOrEqual(MAX_SCORE);
  }, 30_000);
});
