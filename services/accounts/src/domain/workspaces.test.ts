import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../../../audience/src/testing.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

describe("workspaces", () => {
  it("creates with defaults, updates only what is given, lists", async () => {
    const dir = await memoryDirectory();
    const generated = await dir.workspaces.create({ name: "Gen" });
    expect(generated._id).toMatch(/^ws_[0-9a-z]{26}$/);
    expect(generated).toMatchObject({ timezone: "UTC", monthlyLimit: 100000, sendingAccountNew: false, flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: false } });
    await dir.workspaces.create({ id: "ws_a", name: "A", flags: { verified: true }, monthlyLimit: 0 });
    expect((await dir.workspaces.get("ws_a")).monthlyLimit).toBe(0);
    const up = await dir.workspaces.update("ws_a", { flags: { broadcastEarlyAccess: true }, timezone: "Europe/Paris" });
    expect(up).toMatchObject({ name: "A", timezone: "Europe/Paris", flags: { broadcastEarlyAccess: true, emailApiAddon: false, verified: true } });
    expect((await dir.workspaces.list()).map((w) => w._id).sort()).toEqual(["ws_a", generated._id].sort());
  });

  it("refuses duplicates, bad ids, names, zones and limits", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    expect(await codeOf(dir.workspaces.create({ id: "ws_a", name: "again" }))).toBe("workspace_exists");
    expect(await codeOf(dir.workspaces.create({ id: "ws a", name: "x" }))).toBe("invalid_request");
    expect(await codeOf(dir.workspaces.create({ name: " " }))).toBe("invalid_request");
    expect(await codeOf(dir.workspaces.create({ name: "x", timezone: "Paris" }))).toBe("invalid_timezone");
    expect(await codeOf(dir.workspaces.update("ws_a", { monthlyLimit: -1 }))).toBe("invalid_request");
    expect(await codeOf(dir.workspaces.get("ws_missing"))).toBe("workspace_not_found");
    expect(await codeOf(dir.workspaces.get(""))).toBe("invalid_request");
  });
});
