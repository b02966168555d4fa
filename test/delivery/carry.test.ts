import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { CompiledMessageSchema, ContentKind } from "../../gen/mailroom/renderer/v1/renderer_pb.js";
import { startNats, type NatsHandle } from "../harness/nats.js";

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
