/**
 * Without MAILROOM_SMTP_URL mail is captured under <dataDir>/captured/ and read back
 * through DeliveryService (which the gateway renders as a small page).
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { DeliverySource, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { startDeliveryUnderTest, deliveryEnv, headerOf, listenEvents, publishJob, startNeighbours, tempDir, putContents, type Neighbours } from "./support.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";

describe("local capture (no relay configured)", () => {
  const contents = new Map<string, CompiledMessage>();
  let nats: NatsHandle;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
  let client: Client<typeof DeliveryService>;
  let data: Awaited<ReturnType<typeof tempDir>>;

  beforeAll(async () => {
    [nats, neighbours, data] = await Promise.all([startNats(), startNeighbours(), tempDir("mailroom-capture-")]);
    contents.set("ws_acme/broadcast:cmp_1", compiledFrom({ subject: "Weekly {{firstName}}", html: "<p>Hi {{firstName}}</p>", broadcast: true, workspaceId: "ws_acme" }));
    contents.set("ws_other/email:trs_1", compiledFrom({ subject: "Other", html: "<p>other</p>", workspaceId: "ws_other" }));
    neighbours.senders.set("ws_acme/news@acme.test", { address: "news@acme.test" });
    neighbours.senders.set("ws_other/hi@other.test", { address: "hi@other.test" });
    nc = await connectNats(nats.url, "capture-suite");
    await ensureMailStreams(nc);
    await putContents(nc, contents);
    delivery = await startDeliveryUnderTest(nc, deliveryEnv({ natsUrl: nats.url, dataDir: data.dir, neighboursUrl: neighbours.url }));
    client = delivery.client;
  });

  afterAll(async () => {
    await delivery?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), neighbours?.stop()]);
    await data?.remove();
  });

  it("captures the exact message, lists it per workspace and returns its source and parts", async () => {
    const events = listenEvents(nc);
    await publishJob(nc, {
      deliveryId: "dlv_cap1", to: "ann@example.test", source: DeliverySource.BROADCAST, broadcastId: "cmp_1", contentRef: "broadcast:cmp_1",
    });
    await publishJob(nc, { deliveryId: "dlv_cap2", to: "bob@example.test", workspaceId: "ws_other", fromEmail: "hi@other.test" });
    await events.waitFor((all) => all.filter((e) => e.type === MailEventType.SENT).length === 2);
    expect(events.of("dlv_cap1")[0].detail).toMatch(/captured locally/);
    events.stop();

    const status = await client.getStatus({});
    expect(status).toMatchObject({ capturing: true, relay: "capture" });

    const mine = (await client.listCapturedMessages({ workspaceId: "ws_acme" })).messages;
    expect(mine.map((m) => m.deliveryId)).toEqual(["dlv_cap1"]);
    expect(mine[0]).toMatchObject({ to: "ann@example.test", subject: "Weekly Ann", messageId: "dlv_cap1@acme.test", workspaceId: "ws_acme" });
    expect((await client.listCapturedMessages({})).messages).toHaveLength(2);

    const got = await client.getCapturedMessage({ id: mine[0].id });
    const raw = Buffer.from(got.raw).toString("utf8");
    expect(headerOf(raw, "Subject")).toBe("Weekly Ann");
    expect(headerOf(raw, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    expect(got.html).toBe("<p>Hi Ann</p>");
    expect(got.text).toBe("Hi Ann");

    const files = await readdir(path.join(data.dir, "captured"));
    expect(files).toEqual(expect.arrayContaining([`${mine[0].id}.eml`, "index.jsonl"]));

    const missing = await client.getCapturedMessage({ id: "cap_00000000000000000000000000" }).catch((e: unknown) => e);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  });
});
