import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DeliveryPageSchema, type DeliveryPage } from "@mailroom/proto/events/v1/events_pb.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DELIVERY_STREAM } from "@mailroom/pipeline/subjects.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher, deliveryPageSubject } from "@mailroom/pipeline/delivery-jobs.js";
import type { DeliveryPageSpec } from "@mailroom/pipeline/work.js";
import { deliveryIdOf } from "../../services/broadcast/src/domain/model.js";
import type { PageRepository } from "../../services/broadcast/src/domain/ports.js";
import { Sender } from "../../services/broadcast/src/domain/sending.js";
import { buildTestWorld, draft, silentLogger, type TestWorld } from "../../services/broadcast/src/testing.js";
import { startNats, type NatsHandle } from "../harness/nats.js";

const WS = "ws_acme";

/**
 * The broadcast's sender against a real nats-server, with the pipeline's content store and
 * publisher: what lands in MAIL_DELIVERY and in the content bucket (DESIGN §9.1).
 */
describe("broadcast page jobs on JetStream", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let content: ContentStore;
  let publisher: DeliveryJobPublisher;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "pages-test");
    await ensureMailStreams(nc, 1);
    content = await ContentStore.open(nc, { replicas: 1 });
    publisher = new DeliveryJobPublisher(jetstream(nc));
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  /** Every page job stored for the broadcast, in stream order. */
  async function storedPages(broadcastId: string): Promise<DeliveryPage[]> {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(DELIVERY_STREAM);
    const subject = deliveryPageSubject(broadcastId);
    const pages: DeliveryPage[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const msg = await jsm.streams.getMessage(DELIVERY_STREAM, { seq }).catch(() => null);
      if (msg && msg.subject === subject) pages.push(fromBinary(DeliveryPageSchema, msg.data));
    }
    return pages;
  }

  /** A sender on the real publisher and content store; `pages` replaces the page repository (crash injection). */
  function sender(w: TestWorld, owner: string, firstPublish: Array<boolean>, pages: PageRepository = w.repos.pages) {
    const queue = {
      publishJob: publisher.publishJob.bind(publisher),
      async publishPage(page: DeliveryPageSpec) {
        // Is the content there at the moment the page goes out?
        firstPublish.push((await content.get(page.workspaceId, page.contentRef)) !== undefined);
        await publisher.publishPage(page);
      },
    };
    return new Sender({ ...w.repos, pages, directory: w.directory, queue, deliveryContent: content, clock: w.clock, logger: silentLogger }, { owner, windowSize: 200 });
  }

  async function run(s: Sender) {
    for (let i = 0; i < 200; i++) if ((await s.tick()) === 0) return;
    throw new Error("sender kept working");
  }

  it("stores ceil(N / window) page messages, recipients disjoint and complete, each after the content entry", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1_150);
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    const contentThere: boolean[] = [];
    await run(sender(w, "p1", contentThere));

    const pages = await storedPages(broadcast.id);
    expect(pages).toHaveLength(Math.ceil(1_150 / 200));
    expect(contentThere).toHaveLength(pages.length);
    expect(contentThere.every(Boolean)).toBe(true);
    const ids = pages.flatMap((p) => p.recipients.map((r) => r.deliveryId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(w.directory.contacts.map((c) => deliveryIdOf(broadcast.id, c.id))));
    // The entry delivery will read is the broadcast's compiled content.
    const stored = await content.get(WS, `broadcast:${broadcast.id}`);
    expect(stored?.contentId).toBe(broadcast.id);
  });

  it("keeps one message per page when a window is re-published after a crash (msgID deduplication)", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(500);
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    let dying = true;
    const crashing: PageRepository = Object.assign(Object.create(Object.getPrototypeOf(w.repos.pages)), w.repos.pages, {
      markReleased: async (...args: Parameters<PageRepository["markReleased"]>) => {
        if (dying) throw new Error("killed after publishing, before marking the window released");
        return w.repos.pages.markReleased(...args);
      },
    });
    const published: boolean[] = [];
    await sender(w, "doomed", published, crashing).tick();
    dying = false;
    expect(published).toHaveLength(1);
    expect(await storedPages(broadcast.id)).toHaveLength(1);

    w.clock.advance(3_000);
    await run(sender(w, "survivor", published));
    expect(published).toHaveLength(4); // the first window published twice
    const pages = await storedPages(broadcast.id);
    expect(pages).toHaveLength(3);
    expect(new Set(pages.map((p) => p.pageId)).size).toBe(3);
    expect(pages.reduce((n, p) => n + p.recipients.length, 0)).toBe(500);
    expect((await w.service.get(WS, broadcast.id)).progress.released).toBe(500);
  });
});
