import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { detectVariables } from "./templates.js";
import { memoryDirectory, snapshot } from "../../../audience/src/testing.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

describe("templates", () => {
  it("detects {{ variables }} across subject, preview, html and text, in order, once each", () => {
    expect(detectVariables("Hi {{firstName}}", "{{ plan }}", "<p>{{firstName}} {{ unsubscribeUrl }} {{not a var}} {{9x}}</p>", "{{lastName}}"))
      .toEqual(["firstName", "plan", "unsubscribeUrl", "lastName"]);
  });

  it("creates, reads, replaces and deletes by name, unique per workspace", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    const t = await dir.templates.create("ws_a", { name: "welcome", subject: "Hi {{firstName}}", html: "<p>{{plan}}</p>" });
    expect(t).toMatchObject({ name: "welcome", text: "", previewText: "", variables: ["firstName", "plan"] });
    expect(t._id).toMatch(/^tpl_/);
    expect(await codeOf(dir.templates.create("ws_a", { name: "welcome", subject: "x", html: "y" }))).toBe("template_exists");
    // Same name in another workspace is fine and separate.
    await dir.templates.create("ws_b", { name: "welcome", subject: "B", html: "<p>B</p>" });
    expect((await dir.templates.get("ws_a", "welcome")).subject).toBe("Hi {{firstName}}");
    const updated = await dir.templates.update("ws_a", { name: "welcome", subject: "Hello {{lastName}}", html: "<p>x</p>", text: "x" });
    expect(updated).toMatchObject({ subject: "Hello {{lastName}}", text: "x", variables: ["lastName"] });
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(t.updatedAt.getTime());
    await dir.templates.delete("ws_a", "welcome");
    expect(await codeOf(dir.templates.get("ws_a", "welcome"))).toBe("template_not_found");
    expect((await dir.templates.get("ws_b", "welcome")).subject).toBe("B");
  });

  it("never shows or changes another workspace's template", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    await dir.templates.create("ws_a", { name: "secret", subject: "S", html: "<p>S</p>" });
    const before = await snapshot(dir);
    expect(await codeOf(dir.templates.get("ws_b", "secret"))).toBe("template_not_found");
    expect(await codeOf(dir.templates.update("ws_b", { name: "secret", subject: "X", html: "X" }))).toBe("template_not_found");
    expect(await codeOf(dir.templates.delete("ws_b", "secret"))).toBe("template_not_found");
    expect((await dir.templates.list("ws_b")).items).toEqual([]);
    expect(await snapshot(dir)).toEqual(before);
  });

  it("refuses bad input with clear codes and writes nothing", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const before = await snapshot(dir);
    expect(await codeOf(dir.templates.create("ws_a", { name: "a/b", subject: "s", html: "h" }))).toBe("invalid_template_name");
    expect(await codeOf(dir.templates.create("ws_a", { name: "ok", subject: "", html: "h" }))).toBe("invalid_template");
    expect(await codeOf(dir.templates.create("ws_a", { name: "ok", subject: "s\r\nBcc: x@y.test", html: "h" }))).toBe("invalid_template");
    expect(await codeOf(dir.templates.create("ws_a", { name: "ok", subject: "s", html: "" }))).toBe("invalid_template");
    expect(await codeOf(dir.templates.create("ws_a", { name: "ok", subject: "s", html: "x".repeat(501 * 1024) }))).toBe("template_html_too_large");
    expect(await codeOf(dir.templates.create("ws_nope", { name: "ok", subject: "s", html: "h" }))).toBe("workspace_not_found");
    expect(await snapshot(dir)).toEqual(before);
  });

  it("lists with a cursor", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    for (let i = 0; i < 5; i++) await dir.templates.create("ws_a", { name: `t${i}`, subject: "s", html: "h" });
    const p1 = await dir.templates.list("ws_a", { limit: 3 });
    expect(p1.items.map((t) => t.name)).toEqual(["t0", "t1", "t2"]);
    expect(p1.hasMore).toBe(true);
    const p2 = await dir.templates.list("ws_a", { limit: 3, cursor: p1.nextCursor });
    expect(p2).toMatchObject({ hasMore: false, nextCursor: "" });
    expect(p2.items.map((t) => t.name)).toEqual(["t3", "t4"]);
  });
});
