import { describe, expect, it } from "vitest";
import type { EmailRequest } from "./model.js";
import { canonicalJson, requestHash } from "./hash.js";

const raw: EmailRequest = {
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" },
  idempotencyKey: "k1",
};
const templated: EmailRequest = {
  to: "bob@example.test",
  content: { kind: "templated", template: "welcome", variables: {} },
  idempotencyKey: "k2",
};

describe("the idempotency hash of a parsed request", () => {
  it("is the same for requests that mean the same", () => {
    const same = (a: EmailRequest, b: EmailRequest) => expect(requestHash(a)).toBe(requestHash(b));
    same(raw, { ...raw, groupBy: undefined, settings: {}, replyTo: [] });
    same(raw, { ...raw, groupBy: "" });
    // The automation flag left false is no flag: hashes of API requests did not change with it.
    same(templated, { ...templated, automation: false });
    // Defaults spelled out: clicks tracked, opens not for raw emails, tracked for templated ones.
    same(raw, { ...raw, settings: { trackClicks: true, trackOpens: false } });
    same(templated, { ...templated, settings: { trackOpens: true } });
    same(raw, { ...raw, content: { ...raw.content, contactProperties: {} } as EmailRequest["content"] });
    same(templated, { ...templated, content: { kind: "templated", template: "welcome", variables: {} } });
    // One instant, whatever zone the caller wrote it in.
    same({ ...raw, sendAt: new Date("2030-01-31T09:30:00+01:00") }, { ...raw, sendAt: new Date("2030-01-31T08:30:00Z") });
    // Key order inside caller data.
    const withVariables = (variables: Record<string, unknown>): EmailRequest => ({ ...templated, content: { kind: "templated", template: "welcome", variables } });
    same(withVariables({ a: 1, b: { c: 2, d: [1, 2] } }), withVariables({ b: { d: [1, 2], c: 2 }, a: 1 }));
    // Empty lists of the §9.5 fields are no fields; a file is its bytes, not its buffer.
    same(raw, { ...raw, cc: [], bcc: [], headers: [], attachments: [], tags: [] });
    const file = (bytes: number[]) => ({ ...raw, attachments: [{ filename: "a.pdf", content: new Uint8Array(bytes) }] });
    same(file([1, 2, 3]), { ...raw, attachments: [{ filename: "a.pdf", content: new Uint8Array([9, 1, 2, 3]).subarray(1), contentType: "", contentId: "" }] });
  });

  it("differs for a real difference", () => {
    const differ = (a: EmailRequest, b: EmailRequest) => expect(requestHash(a)).not.toBe(requestHash(b));
    differ(raw, { ...raw, content: { ...raw.content, subject: "Hello" } as EmailRequest["content"] });
    differ(raw, { ...raw, to: "bob@example.test" });
    differ(raw, { ...raw, settings: { trackOpens: true } });
    differ(raw, { ...raw, groupBy: "g" });
    // An automation's send (footer, List-Unsubscribe) is not the same request as an API email.
    differ(templated, { ...templated, automation: true });
    differ(raw, { ...raw, replyTo: ["help@acme.test"] });
    differ(raw, { ...raw, sendAt: new Date("2030-01-31T08:30:00Z") });
    const withVariables = (variables: Record<string, unknown>): EmailRequest => ({ ...templated, content: { kind: "templated", template: "welcome", variables } });
    differ(withVariables({ a: 1 }), withVariables({ a: "1" }));
    // Inside caller data a null is a value (clear a property), not an absence.
    differ(withVariables({ a: null }), withVariables({}));
    // DESIGN §9.5 fields.
    differ(raw, { ...raw, cc: ["c@example.test"] });
    differ({ ...raw, cc: ["c@example.test"] }, { ...raw, bcc: ["c@example.test"] });
    differ(raw, { ...raw, headers: [{ name: "X-A", value: "1" }] });
    differ(raw, { ...raw, tags: [{ name: "k", value: "v" }] });
    const file = (bytes: number[], more = {}) => ({ ...raw, attachments: [{ filename: "a.pdf", content: new Uint8Array(bytes), ...more }] });
    differ(file([1, 2, 3]), file([1, 2, 4]));
    differ(file([1]), file([1], { contentId: "x" }));
    differ(file([1]), file([1], { contentType: "text/plain" }));
  });

  it("writes canonical JSON: keys sorted at every level, undefined dropped", () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, { f: 1, e: 0 }] } })).toBe('{"a":{"c":[2,{"e":0,"f":1}]},"b":1}');
  });
});
