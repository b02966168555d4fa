import { describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { groupRoutes } from "../../../audience/src/group-routes.js";
import { Groups } from "../../../audience/src/domain/groups.js";
import { GroupMembershipStore, GroupStore } from "../../../audience/src/adapters/group-store.js";
import { ContactFilters } from "../../../audience/src/adapters/contact-filter.js";
import { directoryRoutes, memoryDirectory } from "../../../audience/src/testing.js";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { broadcastRoutes } from "../../../broadcast/src/routes.js";
import { buildTestWorld, draft } from "../../../broadcast/src/testing.js";
import { AutomationDirectoryClient } from "./directory.js";

const WS = "ws_auto";

/** The adapter against the real accounts and audience units (in memory): what each answer means for a definition. */
describe("AutomationDirectoryClient", () => {
  it("confirms templates, groups (by id or publicId), properties and filters the way the accounts and audience units run them", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({ workspaces: [{ id: WS, name: "Auto" }] });
    await dir.templates.create(WS, { name: "welcome", subject: "Hi", html: "<p>Hi</p>" });
    await dir.properties.create(WS, { slug: "plan", type: "STRING" });
    const groups = new Groups(await GroupStore.open(dir.store), await GroupMembershipStore.open(dir.store), dir.workspaces);
    const vip = await groups.create(WS, { publicId: "vip" });
    const filters = await ContactFilters.open(dir.store);
    // The broadcast unit's own world (workspace ws_acme) answers for broadcasts.
    const broadcasts = await buildTestWorld();
    const { broadcast } = await broadcasts.service.create("ws_acme", draft());
    // directoryRoutes serves AccountsService, ContactService and TemplateService on one router.
    const units = memoryTransport(directoryRoutes(dir, filters.compileContactFilter));
    const adapter = new AutomationDirectoryClient(
      createClient(TemplateService, units),
      createClient(ContactService, units),
      createClient(GroupService, memoryTransport(groupRoutes(groups))),
      createClient(BroadcastService, memoryTransport(broadcastRoutes(broadcasts.service))),
    );

    await dir.templates.create(WS, { name: "frame", kind: "layout", subject: "", html: "<main>{{ content }}</main>" });
    await dir.templates.create(WS, { name: "footer", kind: "snippet", subject: "", html: "<p>bye</p>" });
    expect(await adapter.templateKind(WS, "welcome")).toBe("template");
    expect(await adapter.templateKind(WS, "frame")).toBe("layout");
    expect(await adapter.templateKind(WS, "footer")).toBe("snippet");
    expect(await adapter.templateKind(WS, "ghost")).toBeUndefined();
    expect(await adapter.templateKind(WS, "not a name!")).toBeUndefined();
    expect(await adapter.groupId(WS, "vip")).toBe(vip._id);
    expect(await adapter.groupId(WS, vip._id)).toBe(vip._id);
    expect(await adapter.groupId(WS, "ghost")).toBeUndefined();
    const slugs = await adapter.propertySlugs(WS);
    expect(slugs).toEqual(expect.arrayContaining(["plan", "firstName", "lastName"]));
    expect(await adapter.filterError(WS, { "properties.plan": "pro", groups: "vip" })).toBeUndefined();
    expect(await adapter.broadcastExists("ws_acme", broadcast.id)).toBe(true);
    expect(await adapter.broadcastExists("ws_acme", "cmp_00000000000000000000000000")).toBe(false);
    expect(await adapter.broadcastExists(WS, broadcast.id)).toBe(false); // another workspace's
    expect(await adapter.filterError(WS, { $and: [{ email: { $contains: "@" } }, { "properties.shoe": 1 }] })).toMatch(/^filter\.\$and\[1\]\.properties\.shoe: /);
  });
});
