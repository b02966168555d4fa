import { describe, expect, it } from "vitest";
import { definitionFromJson, definitionRequest, stepPathOf } from "./automation-form.js";

describe("the automation editor, checked with /v1/automations' schemas", () => {
  it("makes the unit's JSON texts from a definition the schema accepts", () => {
    const built = definitionFromJson("Welcome", '{"trigger":{"type":"contact_created"},"steps":[{"id":"hi","type":"send","template":"welcome"}]}');
    if (!built.ok) throw new Error(built.message);
    expect(definitionRequest(built, false)).toEqual({
      ok: true,
      texts: { name: "Welcome", triggerJson: '{"type":"contact_created"}', stepsJson: '[{"id":"hi","type":"send","template":"welcome"}]', reentryJson: '"once"' },
    });
  });

  it("names the refused part as the API does, so the editor shows it inside its step", () => {
    const noTrigger = definitionFromJson("W", '{"steps":[]}');
    if (!noTrigger.ok) throw new Error(noTrigger.message);
    expect(definitionRequest(noTrigger, false)).toMatchObject({ ok: false, path: "trigger" });
    const badStep = definitionFromJson("W", '{"trigger":{"type":"contact_created"},"steps":[{"id":"a","type":"send"},"oops"]}');
    if (!badStep.ok) throw new Error(badStep.message);
    const refused = definitionRequest(badStep, false);
    expect(refused).toMatchObject({ ok: false, path: "steps[1]" });
    expect(stepPathOf(refused.ok ? "" : refused.path)).toBe("steps.1");
    expect(definitionRequest({ name: "x".repeat(201), trigger: {}, steps: [], reentry: "once" }, false)).toMatchObject({ ok: false, path: "name" });
  });
});
