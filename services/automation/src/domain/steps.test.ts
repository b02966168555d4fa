import { describe, expect, it } from "vitest";
import type { Step } from "./model.js";
import { StepTree } from "./steps.js";

/**
 * welcome
 * opened? (wait_for_event) ── then: thanks, vip? (condition) ── then: tag_vip
 *                          │                                └─ (no else)
 *                          └─ else: nudge
 * wait_day
 * last
 */
const steps: Step[] = [
  { id: "welcome", type: "send", template: "welcome" },
  {
    id: "opened",
    type: "wait_for_event",
    event: "email_opened",
    timeout: "P2D",
    then: [
      { id: "thanks", type: "send", template: "thanks" },
      { id: "vip", type: "condition", filter: { plan: "pro" }, then: [{ id: "tag_vip", type: "add_to_group", groupId: "grp_vip" }] },
    ],
    else: [{ id: "nudge", type: "send", template: "nudge" }],
  },
  { id: "wait_day", type: "wait", duration: "P1D" },
  { id: "last", type: "send", template: "last" },
];
const tree = new StepTree(steps);
const id = (s: Step | undefined) => s?.id;

describe("StepTree", () => {
  it("starts at the first top-level step; an empty automation has none", () => {
    expect(id(tree.first())).toBe("welcome");
    expect(new StepTree([]).first()).toBeUndefined();
  });

  it("finds a step anywhere in the tree by id", () => {
    expect(tree.get("tag_vip")).toEqual({ id: "tag_vip", type: "add_to_group", groupId: "grp_vip" });
    expect(id(tree.get("nudge"))).toBe("nudge");
    expect(tree.get("missing")).toBeUndefined();
  });

  it("goes to the next sibling, and completes after the last top-level step", () => {
    expect(id(tree.after("welcome"))).toBe("opened");
    expect(id(tree.after("wait_day"))).toBe("last");
    expect(tree.after("last")).toBeUndefined();
    expect(tree.after("missing")).toBeUndefined();
  });

  it("rejoins after the branching step at the end of a branch, through every level of nesting", () => {
    expect(id(tree.after("thanks"))).toBe("vip");
    // tag_vip ends vip's then, and vip ends opened's then: two levels up.
    expect(id(tree.after("tag_vip"))).toBe("wait_day");
    expect(id(tree.after("nudge"))).toBe("wait_day");
    // The branching step itself, once done (its branch chosen elsewhere), also goes on after it.
    expect(id(tree.after("opened"))).toBe("wait_day");
  });

  it("enters a branch at its first step; an absent branch falls through to what follows", () => {
    expect(id(tree.enterBranch("opened", "then"))).toBe("thanks");
    expect(id(tree.enterBranch("opened", "else"))).toBe("nudge");
    expect(id(tree.enterBranch("vip", "then"))).toBe("tag_vip");
    // vip has no else: rejoin where vip's then would, out of opened's branch too.
    expect(id(tree.enterBranch("vip", "else"))).toBe("wait_day");
    // A step without branches behaves as after().
    expect(id(tree.enterBranch("welcome", "then"))).toBe("opened");
  });

  it("an absent branch at the end of the automation completes the run", () => {
    const t = new StepTree([{ id: "c", type: "condition", filter: { a: 1 }, then: [{ id: "x", type: "exit" }] }]);
    expect(t.enterBranch("c", "else")).toBeUndefined();
    expect(t.after("x")).toBeUndefined();
  });

  it("lists every step depth first: a branching step, its then, then its else", () => {
    expect(tree.all().map((s) => s.id)).toEqual(["welcome", "opened", "thanks", "vip", "tag_vip", "nudge", "wait_day", "last"]);
    // A copy: callers may not change the tree.
    tree.all().pop();
    expect(tree.all()).toHaveLength(8);
  });
});
