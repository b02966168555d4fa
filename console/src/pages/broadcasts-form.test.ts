import { describe, expect, it } from "vitest";
import { EMPTY_DRAFT, draftRequest, draftValuesFromForm } from "./broadcasts-form.js";

const form = {
  name: "Spring", subject: "Hi {{firstName}}", fromName: "Ann", fromEmail: "ann@example.test", replyTo: "a@x.test, b@x.test",
  html: "<p>Hi</p>", trackOpens: "on", audience: "filter", audienceFilter: '{ "status": "SUBSCRIBED" }',
  ab: "on", abSubject0: "A", abSubject1: "B", abTestShare: "20", abMetric: "clicks", abWaitFor: "2", abWaitUnit: "hours",
};

describe("the broadcast draft form, parsed with POST /v1/broadcasts' schema", () => {
  it("makes the service's fields: reply-to as a list, the filter as typed, the A/B test in seconds", () => {
    const req = draftRequest(draftValuesFromForm(form));
    expect(req).toMatchObject({
      name: "Spring", replyTo: ["a@x.test", "b@x.test"], settings: { trackOpens: true, trackClicks: false },
      audience: { all: false, filterJson: '{ "status": "SUBSCRIBED" }' },
      abTest: { variants: [{ subject: "A" }, { subject: "B" }], testShare: 0.2, metric: "clicks", waitForSeconds: 7200n },
    });
    expect(draftRequest(EMPTY_DRAFT)).toMatchObject({ audience: { all: true }, abTest: undefined });
  });

  it("refuses with the schema's issue, naming the field", () => {
    expect(() => draftRequest(draftValuesFromForm({ ...form, audience: "groups" }))).toThrow(/^audience\.groups: /);
    expect(() => draftRequest(draftValuesFromForm({ ...form, audienceFilter: "not json" }))).toThrow(/^audience\.filter: /);
    expect(() => draftRequest(draftValuesFromForm({ ...form, abMetric: "views" }))).toThrow(/^abTest\.metric: /);
    expect(() => draftRequest(draftValuesFromForm({ ...form, replyTo: Array.from({ length: 11 }, (_, i) => `r${i}@x.test`).join(",") }))).toThrow(/^replyTo: /);
    // Variants typed with the test off are not dropped silently.
    expect(() => draftRequest(draftValuesFromForm({ ...form, ab: "" }))).toThrow(/switched off/);
  });
});
