import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../../../audience/src/testing.js";

describe("members", () => {
  it("adds (idempotent, lower-cased), lists and removes per workspace", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    await dir.members.add("ws_a", "Owner@Acme.test");
    await dir.members.add("ws_a", "owner@acme.test");
    await dir.members.add("ws_a", "dev@acme.test");
    expect(await dir.members.list("ws_a")).toEqual(["dev@acme.test", "owner@acme.test"]);
    expect(await dir.members.list("ws_b")).toEqual([]);
    await dir.members.remove("ws_b", "dev@acme.test");
    expect(await dir.members.list("ws_a")).toHaveLength(2);
    await dir.members.remove("ws_a", "DEV@acme.test");
    expect(await dir.members.list("ws_a")).toEqual(["owner@acme.test"]);
    expect(errorInfoOf(await dir.members.add("ws_a", "x").catch((e) => e))?.code).toBe("invalid_email");
    expect(errorInfoOf(await dir.members.add("ws_zz", "a@b.test").catch((e) => e))?.code).toBe("workspace_not_found");
  });
});
