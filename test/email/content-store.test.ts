import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import type { NatsConnection } from "@nats-io/transport-node";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ContentStore, decodeStoredContent } from "@mailroom/pipeline/content-store.js";
import { startNats, type NatsHandle } from "../harness/nats.js";

const compiled = (html: string) =>
  create(CompiledMessageSchema, { html: { segments: [{ part: { case: "literal", value: html } }] }, kind: ContentKind.TRANSACTIONAL, contentId: "trs_1", workspaceId: "ws_a" });

/** The content store on a real nats-server: content of any size an email may have round-trips. */
describe("content store", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let store: ContentStore;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "content-store-test");
    store = await ContentStore.open(nc, { replicas: 1 });
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("keeps small content in one entry and gives it back", async () => {
    const message = compiled("<p>hi</p>");
    await store.put("ws_a", "email:trs_small", toBinary(CompiledMessageSchema, message));
    expect((await store.get("ws_a", "email:trs_small"))?.html).toEqual(message.html);
    expect(await store.get("ws_b", "email:trs_small")).toBeUndefined();
  });

  it("places small content in the job (nothing written) and larger content in the store", async () => {
    const small = compiled("<p>receipt</p>");
    const carried = await store.place("ws_a", "email:trs_carried", small, { cc: ["b@x.test"], headers: [], attachments: [] });
    expect(carried).toBeInstanceOf(Uint8Array);
    expect(decodeStoredContent(carried!).compiled?.html).toEqual(small.html);
    expect(decodeStoredContent(carried!).cc).toEqual(["b@x.test"]);
    expect(await store.get("ws_a", "email:trs_carried"), "nothing written for carried content").toBeUndefined();
    const large = compiled("<p>" + "x".repeat(80 * 1024) + "</p>");
    expect(await store.place("ws_a", "email:trs_large", large)).toBeUndefined();
    expect((await store.get("ws_a", "email:trs_large"))?.html).toEqual(large.html);
    // Carrying can be turned off: everything goes to the store.
    const storing = await ContentStore.open(nc, { replicas: 1, inlineBytes: 0 });
    expect(await storing.place("ws_a", "email:trs_stored", small)).toBeUndefined();
    expect((await store.get("ws_a", "email:trs_stored"))?.html).toEqual(small.html);
  });

  it("stores content larger than a NATS message (5 MB of HTML) in parts and reads it back whole; delete removes it", async () => {
    const html = "<p>" + "0123456789abcdef".repeat(5 * 1024 * 1024 / 16) + "</p>";
    await store.put("ws_a", "email:trs_huge", compiled(html));
    const back = await store.get("ws_a", "email:trs_huge");
    expect(back?.html?.segments[0]?.part.value).toBe(html);
    // Rewritten smaller, it is one entry again.
    await store.put("ws_a", "email:trs_huge", compiled("<p>small now</p>"));
    expect((await store.get("ws_a", "email:trs_huge"))?.html?.segments[0]?.part.value).toBe("<p>small now</p>");
    await store.put("ws_a", "email:trs_huge", compiled(html));
    await store.delete("ws_a", "email:trs_huge");
    expect(await store.get("ws_a", "email:trs_huge")).toBeUndefined();
  });
});
