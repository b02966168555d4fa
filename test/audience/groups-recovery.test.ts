/**
 * CONTACT_TAG_* survive a process killed between a membership write and its events' record:
 * the write's intent (directory_change_intents, in the audience unit's store) is recovered by the real ChangePublisher from
 * the store, rebuilding the event a normal run announces (the domain test checks the ids are the
 * live ones), none for a write that changed nothing.
 */
import { describe, expect, it } from "vitest";
import { createLogger, type NatsConnection } from "@mailroom/kit";
import { openMemoryStore } from "@mailroom/store/open.js";
import { CHANGE_INTENTS_COLLECTION, CHANGE_OUTBOX_COLLECTION, ChangePublisher } from "@mailroom/records/change-publisher.js";
import type { DirectoryEvent } from "@mailroom/records/change-events.js";
import { openAudienceStores } from "../../services/audience/src/adapters/store.js";
import { GroupMembershipStore, GroupStore } from "../../services/audience/src/adapters/group-store.js";
import { storeDirectory } from "../../services/audience/src/testing.js";
import { EmittingGroupMembershipStore, eventsOfIntent } from "../../services/audience/src/domain/changes.js";
import { Groups } from "../../services/audience/src/domain/groups.js";
import type { Store } from "@mailroom/store/port.js";

const logger = createLogger("groups-recovery-test", "silent");

async function groupsOver(store: Store, publish: (e: DirectoryEvent[]) => void, intend?: ChangePublisher["intend"]) {
  let tick = Date.parse("2026-03-01T00:00:00Z");
  const now = () => new Date((tick += 1000));
  const dir = await storeDirectory(store, { now });
  await dir.workspaces.create({ id: "ws_a", name: "A" });
  const groups = new Groups(await GroupStore.open(store), new EmittingGroupMembershipStore(await GroupMembershipStore.open(store), publish, intend, now), dir.workspaces, now);
  return { dir, groups };
}

describe("group membership events across a crash", () => {
  it("recovers each join and leave as announced (same ids); a repeated add or remove recovers nothing", async () => {
    // A normal run: what each step announces.
    const announced: DirectoryEvent[][] = [];
    {
      let current: DirectoryEvent[] = [];
      const { dir, groups } = await groupsOver(openMemoryStore(), (e) => void current.push(...e));
      const g = await groups.create("ws_a", { publicId: "vip" });
      const c = await dir.contacts.create("ws_a", { email: "a@x.test" });
      for (const step of [() => groups.addContact("ws_a", g._id, c._id), () => groups.addContact("ws_a", g._id, c._id), () => groups.removeContact("ws_a", g._id, c._id), () => groups.removeContact("ws_a", g._id, c._id)]) {
        current = [];
        await step();
        announced.push(current);
      }
    }
    expect(announced.map((e) => e.map((x) => x.type))).toEqual([["CONTACT_TAG_ADDED"], [], ["CONTACT_TAG_REMOVED"], []]);

    // The same steps where every write's process "dies" after the write: only intents are left.
    const store = openMemoryStore();
    const publisher = ChangePublisher.open(store, new Promise<NatsConnection>(() => {}), logger);
    const { dir, groups } = await groupsOver(store, () => {}, publisher.intend);
    const g = await groups.create("ws_a", { publicId: "vip" });
    const c = await dir.contacts.create("ws_a", { email: "a@x.test" });
    const repositories = await openAudienceStores(store);
    const rebuild = (intent: Parameters<typeof eventsOfIntent>[0]) => eventsOfIntent(intent, repositories);
    const outbox = store.collection<{ _id: string; body: string }>(CHANGE_OUTBOX_COLLECTION);
    const intents = store.collection(CHANGE_INTENTS_COLLECTION);
    const steps = [() => groups.addContact("ws_a", g._id, c._id), () => groups.addContact("ws_a", g._id, c._id), () => groups.removeContact("ws_a", g._id, c._id), () => groups.removeContact("ws_a", g._id, c._id)];
    const seen = new Set<string>();
    for (const [i, step] of steps.entries()) {
      await step();
      // A remove of a non-member writes nothing it would announce: no intent.
      expect(await intents.countDocuments({}), `step ${i}`).toBe(i === 3 ? 0 : 1);
      await publisher.recover(rebuild);
      expect(await intents.countDocuments({})).toBe(0);
      const recovered = (await outbox.find({}, { sort: { seq: 1 } })).filter((r) => !seen.has(r._id)).map((r) => JSON.parse(r.body) as DirectoryEvent);
      recovered.forEach((e) => seen.add(e.id));
      // One event per step, as a normal run announces it.
      expect(recovered.map((e) => [e.type, e.data.contactId, e.data.groupId]), `step ${i}`).toEqual(announced[i].map((e) => [e.type, c._id, g._id]));
    }
    // Recovering a join whose event was recorded already keeps one record (its id is the same).
    const count = await outbox.countDocuments({});
    const again = new Groups(await GroupStore.open(store), new EmittingGroupMembershipStore(await GroupMembershipStore.open(store), publisher.publish, publisher.intend), dir.workspaces);
    await again.addContact("ws_a", g._id, c._id);
    await publisher.recover(rebuild);
    expect(await outbox.countDocuments({})).toBe(count + 1);
    await Promise.race([publisher.stop(), new Promise((r) => setTimeout(r, 200))]);
  });
});
