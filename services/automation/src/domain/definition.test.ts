import { describe, expect, it } from "vitest";
import { MAX_DEPTH, MAX_STEPS, parseDefinition, parseReentry, parseSteps, parseTrigger, references } from "./definition.js";
import type { Definition, Step } from "./model.js";

/** Every trigger type, step type and reentry shape, as a client would send them. */
const full = {
  trigger: { type: "event", name: "user.signup", filter: { plan: "pro" } },
  steps: [
    { id: "pause", type: "wait", duration: "PT2H" },
    { id: "morning", type: "wait_until", time: "09:00", days: ["mon", "wed", "fri"], timezone: "workspace" },
    { id: "anytime_9", type: "wait_until", time: "09:00" },
    { id: "welcome", type: "send", template: "welcome", settings: { trackOpens: true, trackClicks: false } },
    {
      id: "opened",
      type: "wait_for_event",
      event: "email_opened",
      timeout: "P2D",
      then: [
        {
          id: "is_pro",
          type: "condition",
          filter: { plan: "pro" },
          then: [{ id: "tag", type: "add_to_group", groupId: "grp_vip" }],
          else: [{ id: "upsell", type: "send", template: "upsell" }],
        },
      ],
      else: [{ id: "nudge", type: "send", template: "nudge" }],
    },
    { id: "custom", type: "wait_for_event", event: "billing:invoice.paid", timeout: "P1W", then: [{ id: "thanks", type: "send", template: "thanks" }] },
    { id: "mark", type: "update_contact", properties: { plan: "pro", score: 3, active: true, referrer: null } },
    { id: "untag", type: "remove_from_group", groupId: "trial" },
    { id: "done", type: "exit" },
  ],
  reentry: { after: "P30D" },
};

describe("parseDefinition: a valid definition", () => {
  it("parses every step and reentry shape to the model, unchanged", () => {
    const parsed = parseDefinition(full);
    expect(parsed).toEqual({ ok: true, value: full });
  });

  it.each([
    [{ type: "contact_created" }],
    [{ type: "contact_created", filter: { country: "FR" } }],
    [{ type: "event", name: "signup" }],
    [{ type: "group_joined", groupId: "grp_01" }],
    [{ type: "property_changed", property: "plan" }],
    [{ type: "property_changed", property: "firstName" }],
    [{ type: "email_opened" }],
    [{ type: "email_opened", broadcastId: "brd_1" }],
    [{ type: "email_clicked", template: "welcome" }],
    [{ type: "email_clicked", broadcastId: "brd_1", template: "welcome", filter: { a: 1 } }],
  ])("trigger %j", (trigger) => {
    expect(parseTrigger(trigger)).toEqual({ ok: true, value: trigger });
  });

  it("reentry: once by default, always, or after a duration", () => {
    expect(parseReentry(undefined)).toEqual({ ok: true, value: "once" });
    expect(parseReentry("once")).toEqual({ ok: true, value: "once" });
    expect(parseReentry("always")).toEqual({ ok: true, value: "always" });
    expect(parseReentry({ after: "P30D" })).toEqual({ ok: true, value: { after: "P30D" } });
    expect(parseDefinition({ trigger: { type: "contact_created" }, steps: [{ id: "x", type: "exit" }] })).toEqual({
      ok: true,
      value: { trigger: { type: "contact_created" }, steps: [{ id: "x", type: "exit" }], reentry: "once" },
    });
  });

  it("keeps the model's field order and drops keys set to undefined", () => {
    const parsed = parseSteps([{ template: "w", type: "send", id: "s", settings: undefined }]);
    expect(parsed.ok && Object.keys(parsed.value[0])).toEqual(["id", "type", "template"]);
  });

  it(`accepts ${MAX_STEPS} steps and branches ${MAX_DEPTH} deep`, () => {
    expect(parseSteps(Array.from({ length: MAX_STEPS }, (_, i) => ({ id: `s${i}`, type: "exit" }))).ok).toBe(true);
    expect(parseSteps(nested(MAX_DEPTH)).ok).toBe(true);
  });
});

/** A condition whose then holds a condition… `depth` branches deep, an exit at the bottom. */
function nested(depth: number): unknown[] {
  let steps: unknown[] = [{ id: "bottom", type: "exit" }];
  for (let i = depth; i > 0; i--) steps = [{ id: `c${i}`, type: "condition", filter: { a: i }, then: steps }];
  return steps;
}

const send = (id: string, more: Record<string, unknown> = {}) => ({ id, type: "send", template: "t", ...more });
const cond = (id: string, more: Record<string, unknown> = {}) => ({ id, type: "condition", filter: { a: 1 }, then: [{ id: `${id}_t`, type: "exit" }], ...more });
const wfe = (id: string, more: Record<string, unknown> = {}) => ({ id, type: "wait_for_event", event: "paid", timeout: "P1D", then: [{ id: `${id}_t`, type: "exit" }], ...more });
const ok = { type: "contact_created" };

describe("parseDefinition: every error names its path", () => {
  // [what, definition, path, a piece of the message]
  const cases: Array<[string, { trigger: unknown; steps: unknown; reentry?: unknown }, string, string | RegExp]> = [
    // trigger
    ["trigger missing", { trigger: undefined, steps: [send("a")] }, "trigger", "required"],
    ["trigger not an object", { trigger: "contact_created", steps: [send("a")] }, "trigger", "must be an object"],
    ["trigger type missing", { trigger: {}, steps: [send("a")] }, "trigger.type", "required"],
    ["trigger type unknown", { trigger: { type: "contact_deleted" }, steps: [send("a")] }, "trigger.type", 'the string "contact_deleted" is not a trigger type'],
    ["trigger field unknown", { trigger: { type: "contact_created", name: "x" }, steps: [send("a")] }, "trigger.name", 'unknown field "name" for a contact_created trigger'],
    ["event name missing", { trigger: { type: "event" }, steps: [send("a")] }, "trigger.name", "required"],
    ["event name empty", { trigger: { type: "event", name: "" }, steps: [send("a")] }, "trigger.name", "empty"],
    ["event name malformed", { trigger: { type: "event", name: "user signup" }, steps: [send("a")] }, "trigger.name", "not an event name"],
    ["event name with an empty part", { trigger: { type: "event", name: "user..signup" }, steps: [send("a")] }, "trigger.name", "not an event name"],
    ["event name too long", { trigger: { type: "event", name: "e".repeat(201) }, steps: [send("a")] }, "trigger.name", "longer than 200"],
    ["group id missing", { trigger: { type: "group_joined" }, steps: [send("a")] }, "trigger.groupId", "required"],
    ["group id a number", { trigger: { type: "group_joined", groupId: 7 }, steps: [send("a")] }, "trigger.groupId", "not the number 7"],
    ["property missing", { trigger: { type: "property_changed" }, steps: [send("a")] }, "trigger.property", "required"],
    ["property blank", { trigger: { type: "property_changed", property: "  " }, steps: [send("a")] }, "trigger.property", "empty"],
    ["opened: broadcastId not a string", { trigger: { type: "email_opened", broadcastId: 1 }, steps: [send("a")] }, "trigger.broadcastId", "a broadcast id"],
    ["clicked: template empty", { trigger: { type: "email_clicked", template: "" }, steps: [send("a")] }, "trigger.template", "empty"],
    ["clicked: unknown field", { trigger: { type: "email_clicked", url: "x" }, steps: [send("a")] }, "trigger.url", 'unknown field "url"'],
    ["trigger filter a list", { trigger: { type: "contact_created", filter: [] }, steps: [send("a")] }, "trigger.filter", "not a list"],
    ["trigger filter empty", { trigger: { type: "contact_created", filter: {} }, steps: [send("a")] }, "trigger.filter", "empty filter"],
    ["trigger filter null", { trigger: { type: "contact_created", filter: null }, steps: [send("a")] }, "trigger.filter", "not null"],
    // steps as a whole
    ["steps missing", { trigger: ok, steps: undefined }, "steps", "required"],
    ["steps not a list", { trigger: ok, steps: { id: "a" } }, "steps", "must be a list of steps"],
    ["steps empty", { trigger: ok, steps: [] }, "steps", "at least one step"],
    ["step not an object", { trigger: ok, steps: [send("a"), "exit"] }, "steps[1]", "must be a step"],
    ["step id missing", { trigger: ok, steps: [{ type: "exit" }] }, "steps[0].id", "required"],
    ["step id malformed", { trigger: ok, steps: [{ id: "a b", type: "exit" }] }, "steps[0].id", "not a step id"],
    ["step id too long", { trigger: ok, steps: [{ id: "a".repeat(65), type: "exit" }] }, "steps[0].id", "not a step id"],
    ["step id a number", { trigger: ok, steps: [{ id: 1, type: "exit" }] }, "steps[0].id", "not a step id"],
    ["step id repeated", { trigger: ok, steps: [send("a"), send("b"), send("a")] }, "steps[2].id", '"a" is already the id of steps[0]'],
    ["step id repeated in a branch", { trigger: ok, steps: [cond("a", { then: [send("x")], else: [send("a")] })] }, "steps[0].else[0].id", "already the id of steps[0]"],
    ["step id repeated after a branch", { trigger: ok, steps: [cond("a", { then: [send("x")] }), send("x")] }, "steps[1].id", "already the id of steps[0].then[0]"],
    ["step type missing", { trigger: ok, steps: [{ id: "a" }] }, "steps[0].type", "required"],
    ["step type unknown", { trigger: ok, steps: [{ id: "a", type: "sleep" }] }, "steps[0].type", '"sleep" is not a step type'],
    ["unknown field", { trigger: ok, steps: [send("a", { delay: 3 })] }, "steps[0].delay", 'unknown field "delay" for a send step'],
    ["unknown field on exit", { trigger: ok, steps: [{ id: "a", type: "exit", reason: "x" }] }, "steps[0].reason", 'unknown field "reason" for an exit step (it has no other fields)'],
    // wait
    ["wait: duration missing", { trigger: ok, steps: [{ id: "a", type: "wait" }] }, "steps[0].duration", "required"],
    ["wait: duration a number", { trigger: ok, steps: [{ id: "a", type: "wait", duration: 60 }] }, "steps[0].duration", "not the number 60"],
    ["wait: duration malformed", { trigger: ok, steps: [{ id: "a", type: "wait", duration: "1 day" }] }, "steps[0].duration", "ISO 8601"],
    ["wait: months", { trigger: ok, steps: [{ id: "a", type: "wait", duration: "P1M" }] }, "steps[0].duration", "years or months"],
    ["wait: too short", { trigger: ok, steps: [{ id: "a", type: "wait", duration: "PT0S" }] }, "steps[0].duration", "shorter than 1 second"],
    ["wait: too long", { trigger: ok, steps: [{ id: "a", type: "wait", duration: "P367D" }] }, "steps[0].duration", "longer than 366 days"],
    // wait_until
    ["wait_until: time missing", { trigger: ok, steps: [{ id: "a", type: "wait_until" }] }, "steps[0].time", "required"],
    ["wait_until: time 24:00", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "24:00" }] }, "steps[0].time", "00:00 to 23:59"],
    ["wait_until: time 9:00", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "9:00" }] }, "steps[0].time", "HH:MM"],
    ["wait_until: time 09:60", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:60" }] }, "steps[0].time", "HH:MM"],
    ["wait_until: days not a list", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:00", days: "mon" }] }, "steps[0].days", "must be a list of days"],
    ["wait_until: days empty", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:00", days: [] }] }, "steps[0].days", "empty list"],
    ["wait_until: unknown day", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:00", days: ["mon", "monday"] }] }, "steps[0].days[1]", '"monday" is not a day'],
    ["wait_until: day twice", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:00", days: ["mon", "tue", "mon"] }] }, "steps[0].days[2]", "listed twice"],
    ["wait_until: timezone an IANA name", { trigger: ok, steps: [{ id: "a", type: "wait_until", time: "09:00", timezone: "Europe/Paris" }] }, "steps[0].timezone", '"contact", "workspace"'],
    // send
    ["send: template missing", { trigger: ok, steps: [{ id: "a", type: "send" }] }, "steps[0].template", "required"],
    ["send: template empty", { trigger: ok, steps: [send("a", { template: "" })] }, "steps[0].template", "empty"],
    ["send: settings not an object", { trigger: ok, steps: [send("a", { settings: true })] }, "steps[0].settings", "must be an object"],
    ["send: settings unknown", { trigger: ok, steps: [send("a", { settings: { trackOpens: true, from: "x" } })] }, "steps[0].settings.from", 'unknown field "from" for send settings'],
    ["send: settings not boolean", { trigger: ok, steps: [send("a", { settings: { trackClicks: "yes" } })] }, "steps[0].settings.trackClicks", "true or false"],
    // condition
    ["condition: filter missing", { trigger: ok, steps: [cond("a", { filter: undefined })] }, "steps[0].filter", "required"],
    ["condition: filter empty", { trigger: ok, steps: [cond("a", { filter: {} })] }, "steps[0].filter", "empty filter"],
    ["condition: filter a string", { trigger: ok, steps: [cond("a", { filter: "plan = pro" })] }, "steps[0].filter", "must be a filter object"],
    ["condition: then missing", { trigger: ok, steps: [cond("a", { then: undefined })] }, "steps[0].then", "required"],
    ["condition: then empty", { trigger: ok, steps: [cond("a", { then: [] })] }, "steps[0].then", "empty branch"],
    ["condition: else empty", { trigger: ok, steps: [cond("a", { else: [] })] }, "steps[0].else", "empty branch"],
    ["condition: else not a list", { trigger: ok, steps: [cond("a", { else: { id: "x", type: "exit" } })] }, "steps[0].else", "must be a list of steps"],
    ["condition: bad step in then", { trigger: ok, steps: [send("a"), cond("b", { then: [send("c"), { id: "d", type: "send" }] })] }, "steps[1].then[1].template", "required"],
    ["nested: bad step deep in else", { trigger: ok, steps: [cond("a", { else: [wfe("b", { then: [{ id: "c", type: "wait", duration: "P1Y" }] })] })] }, "steps[0].else[0].then[0].duration", "years or months"],
    // wait_for_event
    ["wait_for_event: event missing", { trigger: ok, steps: [wfe("a", { event: undefined })] }, "steps[0].event", "required"],
    ["wait_for_event: event malformed", { trigger: ok, steps: [wfe("a", { event: "paid!" })] }, "steps[0].event", "not an event name"],
    ["wait_for_event: timeout missing", { trigger: ok, steps: [wfe("a", { timeout: undefined })] }, "steps[0].timeout", "required"],
    ["wait_for_event: fractional timeout", { trigger: ok, steps: [wfe("a", { timeout: "PT0.5S" })] }, "steps[0].timeout", "fraction"],
    ["wait_for_event: then empty", { trigger: ok, steps: [wfe("a", { then: [] })] }, "steps[0].then", "empty branch"],
    ["wait_for_event: else empty", { trigger: ok, steps: [wfe("a", { else: [] })] }, "steps[0].else", "leave else out"],
    // update_contact
    ["update_contact: properties missing", { trigger: ok, steps: [{ id: "a", type: "update_contact" }] }, "steps[0].properties", "required"],
    ["update_contact: properties empty", { trigger: ok, steps: [{ id: "a", type: "update_contact", properties: {} }] }, "steps[0].properties", "empty object"],
    ["update_contact: properties a list", { trigger: ok, steps: [{ id: "a", type: "update_contact", properties: [["plan", "pro"]] }] }, "steps[0].properties", "not a list"],
    ["update_contact: object value", { trigger: ok, steps: [{ id: "a", type: "update_contact", properties: { plan: "pro", tags: { a: 1 } } }] }, "steps[0].properties.tags", "string, number, boolean or null"],
    ["update_contact: list value", { trigger: ok, steps: [{ id: "a", type: "update_contact", properties: { tags: ["a"] } }] }, "steps[0].properties.tags", "not a list"],
    ["update_contact: empty key", { trigger: ok, steps: [{ id: "a", type: "update_contact", properties: { "": 1 } }] }, "steps[0].properties.", "may not be empty"],
    // groups
    ["add_to_group: groupId missing", { trigger: ok, steps: [{ id: "a", type: "add_to_group" }] }, "steps[0].groupId", "required"],
    ["remove_from_group: groupId empty", { trigger: ok, steps: [{ id: "a", type: "remove_from_group", groupId: "" }] }, "steps[0].groupId", "empty"],
    ["add_to_group: unknown field", { trigger: ok, steps: [{ id: "a", type: "add_to_group", groupId: "g", group: "g" }] }, "steps[0].group", "unknown field"],
    // limits
    [`more than ${MAX_STEPS} steps`, { trigger: ok, steps: Array.from({ length: MAX_STEPS + 1 }, (_, i) => ({ id: `s${i}`, type: "exit" })) }, `steps[${MAX_STEPS}]`, `more than ${MAX_STEPS} steps`],
    [
      `more than ${MAX_STEPS} steps, counting branches`,
      { trigger: ok, steps: [cond("c", { then: Array.from({ length: MAX_STEPS - 1 }, (_, i) => send(`s${i}`)) }), send("over")] },
      "steps[1]",
      `more than ${MAX_STEPS} steps`,
    ],
    [`branches ${MAX_DEPTH + 1} deep`, { trigger: ok, steps: nested(MAX_DEPTH + 1) }, `steps[0]${".then[0]".repeat(MAX_DEPTH)}.then`, `more than ${MAX_DEPTH} deep`],
    // reentry
    ["reentry unknown word", { trigger: ok, steps: [send("a")], reentry: "never" }, "reentry", '"once", "always" or { "after": "P30D" }'],
    ["reentry null", { trigger: ok, steps: [send("a")], reentry: null }, "reentry", "null is not"],
    ["reentry after missing", { trigger: ok, steps: [send("a")], reentry: {} }, "reentry.after", "required"],
    ["reentry after malformed", { trigger: ok, steps: [send("a")], reentry: { after: "30 days" } }, "reentry.after", "ISO 8601"],
    ["reentry after in months", { trigger: ok, steps: [send("a")], reentry: { after: "P1M" } }, "reentry.after", "years or months"],
    ["reentry unknown field", { trigger: ok, steps: [send("a")], reentry: { after: "P1D", max: 3 } }, "reentry.max", 'unknown field "max" for reentry'],
  ];

  it.each(cases)("%s → %s", (_what, input, path, message) => {
    const parsed = parseDefinition(input);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error.path).toBe(path);
    expect(parsed.error.message).toMatch(typeof message === "string" ? new RegExp(message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) : message);
    // The caller prefixes the path: the message does not repeat it.
    expect(parsed.error.message.startsWith(path)).toBe(false);
  });
});

const pathOf = (parsed: { ok: true } | { ok: false; error: { path: string } }) => (parsed.ok ? undefined : parsed.error.path);

describe("parseDefinition: the first error in document order", () => {
  it("trigger before steps before reentry", () => {
    const bad = { trigger: { type: "nope" }, steps: [{ id: "a" }], reentry: "x" };
    expect(pathOf(parseDefinition(bad))).toBe("trigger.type");
    expect(pathOf(parseDefinition({ ...bad, trigger: ok }))).toBe("steps[0].type");
    expect(pathOf(parseDefinition({ ...bad, trigger: ok, steps: [send("a")] }))).toBe("reentry");
  });

  it("earlier steps, and a branch, before later steps", () => {
    const parsed = parseSteps([send("a"), cond("b", { then: [{ id: "c", type: "wait" }] }), { id: "d", type: "send" }]);
    expect(!parsed.ok && parsed.error.path).toBe("steps[1].then[0].duration");
  });

  it("within a step: fields as written, then missing required ones", () => {
    const first = parseSteps([{ id: "a", type: "wait_for_event", else: [], event: "!" }]);
    expect(!first.ok && first.error.path).toBe("steps[0].else");
    const second = parseSteps([{ id: "a", type: "wait_for_event", event: "!", else: [] }]);
    expect(!second.ok && second.error.path).toBe("steps[0].event");
    // Present fields are all fine: then the first missing one, in the model's order.
    const missing = parseSteps([{ id: "a", type: "wait_for_event", then: [send("b")] }]);
    expect(!missing.ok && missing.error.path).toBe("steps[0].event");
  });
});

describe("references", () => {
  it("lists templates, groups, properties and filters with their paths, trigger first, then depth first", () => {
    const parsed = parseDefinition(full);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(references(parsed.value)).toEqual([
      { kind: "filter", filter: { plan: "pro" }, path: "trigger.filter" },
      { kind: "template", name: "welcome", path: "steps[3].template" },
      { kind: "filter", filter: { plan: "pro" }, path: "steps[4].then[0].filter" },
      { kind: "group", id: "grp_vip", path: "steps[4].then[0].then[0].groupId" },
      { kind: "template", name: "upsell", path: "steps[4].then[0].else[0].template" },
      { kind: "template", name: "nudge", path: "steps[4].else[0].template" },
      { kind: "template", name: "thanks", path: "steps[5].then[0].template" },
      { kind: "property", slug: "plan", path: "steps[6].properties.plan" },
      { kind: "property", slug: "score", path: "steps[6].properties.score" },
      { kind: "property", slug: "active", path: "steps[6].properties.active" },
      { kind: "property", slug: "referrer", path: "steps[6].properties.referrer" },
      { kind: "group", id: "trial", path: "steps[7].groupId" },
    ]);
  });

  it("names a group_joined group and a property_changed property, but not a built-in field", () => {
    const steps: Step[] = [{ id: "a", type: "add_to_group", groupId: "grp_b" }];
    const def = (trigger: Definition["trigger"]): Definition => ({ trigger, steps, reentry: "once" });
    expect(references(def({ type: "group_joined", groupId: "newsletter" }))).toEqual([
      { kind: "group", id: "newsletter", path: "trigger.groupId" },
      { kind: "group", id: "grp_b", path: "steps[0].groupId" },
    ]);
    expect(references(def({ type: "property_changed", property: "plan", filter: { a: 1 } }))).toEqual([
      { kind: "property", slug: "plan", path: "trigger.property" },
      { kind: "filter", filter: { a: 1 }, path: "trigger.filter" },
      { kind: "group", id: "grp_b", path: "steps[0].groupId" },
    ]);
    expect(references(def({ type: "email_clicked", template: "welcome", broadcastId: "cmp_1" }))).toEqual([
      { kind: "template", name: "welcome", path: "trigger.template" },
      { kind: "broadcast", id: "cmp_1", path: "trigger.broadcastId" },
      { kind: "group", id: "grp_b", path: "steps[0].groupId" },
    ]);
    for (const builtIn of ["firstName", "lastName", "email"])
      expect(references(def({ type: "property_changed", property: builtIn }))).toEqual([{ kind: "group", id: "grp_b", path: "steps[0].groupId" }]);
  });
});
