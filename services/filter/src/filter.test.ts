import { describe, expect, it } from "vitest";
import {
  dateAgo, engagementConditions, engagementKey, parseFilter, referencedGroups, toStoreFilter, FIELD_OPERATORS, MAX_CONDITIONS, MAX_DEPTH, OPERATORS_BY_KIND,
  type EngagementCondition, type FieldKind, type FilterNode, type ParseContext, type PropertyType,
} from "./filter.js";

const NOW = new Date("2026-03-31T12:00:00.000Z");
const ctx: ParseContext = {
  properties: new Map<string, PropertyType>([
    ["plan", "select"], ["nickname", "string"], ["age", "number"], ["vip", "boolean"], ["renewal", "date"], ["tags", "multi_select"],
  ]),
  groupIdOf: (id) => ({ grp_1: "grp_1", beta: "grp_1", grp_2: "grp_2", alpha: "grp_2" } as Record<string, string>)[id],
  now: NOW,
};

function parsed(input: unknown): FilterNode {
  const r = parseFilter(input, ctx);
  if (!r.ok) throw new Error(`unexpected error: ${r.error.message}`);
  return r.filter;
}
const compile = (input: unknown, sets: Record<string, string[]> = {}) =>
  toStoreFilter(parsed(input), { engagement: (c) => new Set(sets[engagementKey(c)] ?? []) });
function error(input: unknown) {
  const r = parseFilter(input, ctx);
  if (r.ok) throw new Error(`expected an error for ${JSON.stringify(input)}`);
  expect(r.error.message.startsWith(`${r.error.path}: `)).toBe(true);
  return r.error;
}

describe("fields", () => {
  it("email compares lowercased on emailLower", () => {
    expect(compile({ email: "Ann@Example.COM" })).toEqual({ emailLower: { $eq: "ann@example.com" } });
    expect(compile({ email: { $in: ["A@x.io", "b@x.io"] } })).toEqual({ emailLower: { $in: ["a@x.io", "b@x.io"] } });
    expect(compile({ "properties.email": { $endsWith: "@X.io" } })).toEqual({ emailLower: { $regex: "@x\\.io$", $options: "i" } });
  });
  it("firstName, lastName and built-in properties are top-level text fields", () => {
    expect(compile({ firstName: "Ann" })).toEqual({ firstName: { $eq: "Ann" } });
    expect(compile({ lastName: { $ne: "Lee" } })).toEqual({ lastName: { $ne: "Lee" } });
    expect(compile({ "properties.firstName": "Ann" })).toEqual({ firstName: { $eq: "Ann" } });
    expect(compile({ "properties.city": { $startsWith: "Ber" } })).toEqual({ city: { $regex: "^Ber", $options: "i" } });
    expect(compile({ "properties.timezone": "Europe/Berlin" })).toEqual({ timezone: { $eq: "Europe/Berlin" } });
  });
  it("status and source take their enum values, case-insensitively", () => {
    expect(compile({ status: "subscribed" })).toEqual({ status: { $eq: "SUBSCRIBED" } });
    expect(compile({ status: { $nin: ["BANNED", "archived"] } })).toEqual({ status: { $nin: ["BANNED", "ARCHIVED"] } });
    expect(compile({ source: { $in: ["CSV_IMPORT"] } })).toEqual({ source: { $in: ["CSV_IMPORT"] } });
    expect(compile({ "properties.status": "BANNED" })).toEqual({ status: { $eq: "BANNED" } });
    expect(error({ status: "GONE" }).path).toBe("filter.status");
    expect(error({ source: { $in: ["API", 3] } }).path).toBe("filter.source.$in[0]");
  });
  it("createdAt and updatedAt compare as Dates; ISO dates or $ago", () => {
    expect(compile({ createdAt: { $gte: "2026-01-01" } })).toEqual({ createdAt: { $gte: new Date("2026-01-01T00:00:00.000Z") } });
    expect(compile({ updatedAt: { $lt: { $ago: "P30D" } } })).toEqual({ updatedAt: { $lt: new Date("2026-03-01T12:00:00.000Z") } });
    expect(compile({ createdAt: "2026-02-03T04:05:06+02:00" })).toEqual({ createdAt: { $eq: new Date("2026-02-03T02:05:06.000Z") } });
    // A date-time without a zone is UTC, not the server's local time.
    expect(compile({ createdAt: { $gt: "2026-02-03T04:05" } })).toEqual({ createdAt: { $gt: new Date("2026-02-03T04:05:00.000Z") } });
    expect(compile({ createdAt: { $exists: true } })).toEqual({ createdAt: { $exists: true } });
  });
  it("groups: ids or publicIds, resolved to ids on the contact's groups array", () => {
    expect(compile({ groups: "beta" })).toEqual({ groups: { $eq: "grp_1" } });
    expect(compile({ groups: { $ne: "grp_2" } })).toEqual({ groups: { $ne: "grp_2" } });
    expect(compile({ groups: { $in: ["beta", "alpha"] } })).toEqual({ groups: { $in: ["grp_1", "grp_2"] } });
    expect(compile({ groups: { $nin: ["alpha"] } })).toEqual({ groups: { $nin: ["grp_2"] } });
    const e = error({ $and: [{ groups: { $in: ["beta", "nope"] } }] });
    expect(e.path).toBe("filter.$and[0].groups.$in[1]");
    expect(e.message).toContain('unknown group "nope"');
    expect(error({ groups: { $contains: "beta" } }).message).toContain("does not apply to groups");
    expect(error({ groups: 5 }).path).toBe("filter.groups");
  });
});

describe("properties by type", () => {
  it("string and select: every text operator, case-insensitive, escaped", () => {
    expect(compile({ "properties.nickname": { $contains: "a.b*" } })).toEqual({ "properties.nickname": { $regex: "a\\.b\\*", $options: "i" } });
    expect(compile({ "properties.nickname": { $startsWith: "(x" } })).toEqual({ "properties.nickname": { $regex: "^\\(x", $options: "i" } });
    expect(compile({ "properties.nickname": { $endsWith: "$" } })).toEqual({ "properties.nickname": { $regex: "\\$$", $options: "i" } });
    expect(compile({ "properties.nickname": { $gt: "m", $lte: "t" } })).toEqual({ $and: [{ "properties.nickname": { $gt: "m" } }, { "properties.nickname": { $lte: "t" } }] });
    expect(compile({ "properties.plan": "pro" })).toEqual({ "properties.plan": { $eq: "pro" } });
    expect(compile({ "properties.plan": { $exists: false } })).toEqual({ "properties.plan": { $exists: false } });
    expect(error({ "properties.plan": { $gt: "a" } }).message).toContain("operator $gt does not apply");
    expect(error({ "properties.nickname": 3 }).message).toContain("does not match properties.nickname (a string)");
    expect(error({ "properties.nickname": { $contains: "" } }).message).toContain("non-empty");
  });
  it("number", () => {
    expect(compile({ "properties.age": { $gte: 18, $lt: 65 } })).toEqual({ $and: [{ "properties.age": { $gte: 18 } }, { "properties.age": { $lt: 65 } }] });
    expect(compile({ "properties.age": { $in: [1, 2] } })).toEqual({ "properties.age": { $in: [1, 2] } });
    expect(error({ "properties.age": "18" }).message).toContain("(a number)");
    expect(error({ "properties.age": { $contains: "1" } }).path).toBe("filter.properties.age.$contains");
  });
  it("boolean", () => {
    expect(compile({ "properties.vip": true })).toEqual({ "properties.vip": { $eq: true } });
    expect(compile({ "properties.vip": { $ne: true } })).toEqual({ "properties.vip": { $ne: true } });
    expect(error({ "properties.vip": "true" }).message).toContain("true or false");
    expect(error({ "properties.vip": { $gt: false } }).message).toContain("does not apply");
  });
  it("date properties compare as the ISO strings they are stored as", () => {
    expect(compile({ "properties.renewal": { $lte: { $ago: "P1M" } } })).toEqual({ "properties.renewal": { $lte: "2026-02-28T12:00:00.000Z" } });
    expect(compile({ "properties.renewal": { $in: ["2026-05-01"] } })).toEqual({ "properties.renewal": { $in: ["2026-05-01T00:00:00.000Z"] } });
    expect(error({ "properties.renewal": "next week" }).message).toContain("is not a date");
    expect(error({ "properties.renewal": 20260501 }).path).toBe("filter.properties.renewal");
  });
  it("multi_select: an element equals (bare/$eq), $contains is a case-insensitive element match", () => {
    expect(compile({ "properties.tags": "news" })).toEqual({ "properties.tags": { $eq: "news" } });
    expect(compile({ "properties.tags": { $contains: "News" } })).toEqual({ "properties.tags": { $regex: "^News$", $options: "i" } });
    expect(compile({ "properties.tags": { $nin: ["a", "b"] } })).toEqual({ "properties.tags": { $nin: ["a", "b"] } });
    expect(error({ "properties.tags": ["news"] }).message).toContain("use { \"$in\"");
    expect(error({ "properties.tags": { $startsWith: "n" } }).message).toContain("does not apply");
  });
});

describe("operators", () => {
  it("every operator on every kind of field: accepted exactly where the grammar allows it", () => {
    const samples: Record<FieldKind, [string, unknown]> = {
      text: ["firstName", "Ann"], email: ["email", "a@x.io"], enum: ["status", "SUBSCRIBED"], date: ["createdAt", "2026-01-01"],
      date_iso: ["properties.renewal", "2026-01-01"], number: ["properties.age", 3], boolean: ["properties.vip", true],
      select: ["properties.plan", "pro"], multi_select: ["properties.tags", "news"], groups: ["groups", "beta"],
    };
    for (const [kind, [name, value]] of Object.entries(samples) as [FieldKind, [string, unknown]][]) {
      for (const op of FIELD_OPERATORS) {
        const arg = op === "$exists" ? true : op === "$in" || op === "$nin" ? [value] : value;
        const r = parseFilter({ [name]: { [op]: arg } }, ctx);
        expect([kind, op, r.ok]).toEqual([kind, op, OPERATORS_BY_KIND[kind].includes(op)]);
        if (r.ok) {
          const compiled = toStoreFilter(r.filter, { engagement: () => new Set() });
          expect(Object.keys(compiled)).toHaveLength(1);
        } else {
          expect(r.error).toEqual({ path: `filter.${name}.${op}`, message: expect.stringContaining(`operator ${op} does not apply to ${name}`) });
        }
      }
    }
  });

  it("$exists takes a boolean; $in/$nin take a list", () => {
    expect(error({ firstName: { $exists: "yes" } }).path).toBe("filter.firstName.$exists");
    expect(error({ firstName: { $in: "Ann" } }).message).toContain("takes a list");
    expect(error({ firstName: { $in: Array(1001).fill("x") } }).message).toContain("at most 1000");
    expect(compile({ firstName: { $in: [] } })).toEqual({ firstName: { $in: [] } });
  });
  it("unknown operators, empty conditions and null are errors naming the path", () => {
    expect(error({ firstName: { $regex: "x" } }).message).toBe('filter.firstName.$regex: unknown operator "$regex" (operators: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $contains, $startsWith, $endsWith)');
    expect(error({ firstName: { like: "x" } }).path).toBe("filter.firstName.like");
    expect(error({ firstName: {} }).path).toBe("filter.firstName");
    expect(error({ firstName: null }).message).toContain("$exists");
    expect(error({ firstName: "x".repeat(1001) }).message).toContain("at most 1000");
  });
});

describe("logic", () => {
  it("several keys are all required; $and, $or, $not nest", () => {
    expect(compile({ firstName: "Ann", "properties.vip": true })).toEqual({ $and: [{ firstName: { $eq: "Ann" } }, { "properties.vip": { $eq: true } }] });
    expect(compile({ $or: [{ firstName: "Ann" }, { $and: [{ lastName: "Lee" }, { $not: { "properties.age": { $gt: 3 } } }] }] })).toEqual({
      $or: [{ firstName: { $eq: "Ann" } }, { $and: [{ lastName: { $eq: "Lee" } }, { $nor: [{ "properties.age": { $gt: 3 } }] }] }],
    });
    expect(compile({ $and: [{ firstName: "Ann" }] })).toEqual({ firstName: { $eq: "Ann" } });
    expect(compile({})).toEqual({});
    expect(compile({ $not: {} })).toEqual({ $nor: [{}] });
  });
  it("malformed logic is an error at its path", () => {
    expect(error({ $and: [] }).path).toBe("filter.$and");
    expect(error({ $or: { a: 1 } }).path).toBe("filter.$or");
    expect(error({ $or: [{ firstName: "a" }, 3] }).path).toBe("filter.$or[1]");
    expect(error({ $not: [] }).path).toBe("filter.$not");
    expect(error({ $nor: [{}] }).message).toContain('unknown operator "$nor"');
    expect(error([]).path).toBe("filter");
    expect(error("x").path).toBe("filter");
  });
  it("the agreed message shape, and unknown fields and properties", () => {
    expect(error({ $and: [{ firstName: "a" }, { "properties.plan2": "x" }] }).message).toBe('filter.$and[1].properties.plan2: unknown property "plan2"');
    expect(error({ phone: "1" }).message).toContain('unknown field "phone"');
    expect(error({ properties: { plan: "pro" } }).path).toBe("filter.properties");
  });
  it("depth and size are bounded", () => {
    let deep: Record<string, unknown> = { firstName: "a" };
    for (let i = 0; i <= MAX_DEPTH; i++) deep = { $not: deep };
    expect(error(deep).message).toContain("nest at most");
    const many = { $or: Array.from({ length: MAX_CONDITIONS }, () => ({ firstName: "a", lastName: "b" })) };
    expect(error(many).message).toContain(`at most ${MAX_CONDITIONS} conditions`);
  });
});

describe("$engagement", () => {
  it("is listed, resolved by the caller and compiled to _id $in (and $nor under $not)", () => {
    const node = parsed({ $or: [{ $engagement: { event: "opened", broadcastId: "cmp_1" } }, { $not: { $engagement: { event: "bounced", since: { $ago: "P7D" }, min: 2 } } }] });
    const conds = engagementConditions(node);
    expect(conds).toEqual<EngagementCondition[]>([
      { event: "opened", broadcastId: "cmp_1", min: 1 },
      { event: "bounced", since: new Date("2026-03-24T12:00:00.000Z"), min: 2 },
    ]);
    const sets = new Map([[engagementKey(conds[0]), new Set(["ctc_b", "ctc_a"])], [engagementKey(conds[1]), new Set<string>()]]);
    expect(toStoreFilter(node, { engagement: (c) => sets.get(engagementKey(c))! })).toEqual({
      $or: [{ _id: { $in: ["ctc_a", "ctc_b"] } }, { $nor: [{ _id: { $in: [] } }] }],
    });
  });
  it("an $or of engagement terms is one merged, sorted, frozen id list (beside its other branches)", () => {
    const opened = (b: string) => ({ $engagement: { event: "opened", broadcastId: b } });
    const lists: Record<string, string[]> = { cmp_1: ["ctc_a", "ctc_c"], cmp_2: ["ctc_b", "ctc_c", "ctc_d"], cmp_3: [] };
    const opts = { engagement: (c: EngagementCondition) => lists[c.broadcastId!] };
    const only = toStoreFilter(parsed({ $or: [opened("cmp_1"), opened("cmp_2"), opened("cmp_3")] }), opts);
    expect(only).toEqual({ _id: { $in: ["ctc_a", "ctc_b", "ctc_c", "ctc_d"] } });
    expect(Object.isFrozen((only._id as { $in: string[] }).$in)).toBe(true);
    const mixed = toStoreFilter(parsed({ $or: [opened("cmp_2"), { firstName: "x" }, { $engagement: { event: "clicked" } }] }), {
      engagement: (c) => (c.event === "clicked" ? new Set(["ctc_z", "ctc_a"]) : lists[c.broadcastId!]),
    });
    expect(mixed).toEqual({ $or: [{ _id: { $in: ["ctc_a", "ctc_b", "ctc_c", "ctc_d", "ctc_z"] } }, { firstName: { $eq: "x" } }] });
    // One term in an $or stays a branch of its own.
    expect(toStoreFilter(parsed({ $or: [opened("cmp_1"), { firstName: "x" }] }), opts)).toEqual({ $or: [{ _id: { $in: ["ctc_a", "ctc_c"] } }, { firstName: { $eq: "x" } }] });
  });
  it("lists each distinct condition once", () => {
    const node = parsed({ $and: [{ $engagement: { event: "clicked" } }, { $or: [{ $engagement: { event: "clicked", min: 1 } }, { firstName: "a" }] }] });
    expect(engagementConditions(node)).toHaveLength(1);
  });
  it("bad terms are errors at their path", () => {
    expect(error({ $engagement: { event: "read" } }).path).toBe("filter.$engagement.event");
    expect(error({ $engagement: {} }).path).toBe("filter.$engagement.event");
    expect(error({ $engagement: { event: "opened", min: 0 } }).path).toBe("filter.$engagement.min");
    expect(error({ $engagement: { event: "opened", min: 1.5 } }).path).toBe("filter.$engagement.min");
    expect(error({ $engagement: { event: "opened", since: { $ago: "30 days" } } }).path).toBe("filter.$engagement.since.$ago");
    expect(error({ $engagement: { event: "opened", broadcastId: "cmp 1" } }).path).toBe("filter.$engagement.broadcastId");
    expect(error({ $engagement: { event: "opened", count: 3 } }).path).toBe("filter.$engagement.count");
    expect(error({ $engagement: "opened" }).path).toBe("filter.$engagement");
    const many = { $or: Array.from({ length: 11 }, (_, i) => ({ $engagement: { event: "opened", broadcastId: `cmp_${i}` } })) };
    expect(error(many)).toEqual({ path: "filter.$or[10].$engagement", message: "filter.$or[10].$engagement: a filter may hold at most 10 $engagement terms" });
  });
});

describe("$ago durations", () => {
  it("counts back calendar years and months, and weeks, days and times", () => {
    expect(dateAgo("P1Y2M", NOW)?.toISOString()).toBe("2025-01-31T12:00:00.000Z");
    expect(dateAgo("P2W", NOW)?.toISOString()).toBe("2026-03-17T12:00:00.000Z");
    expect(dateAgo("PT1H30M", NOW)?.toISOString()).toBe("2026-03-31T10:30:00.000Z");
    expect(dateAgo("P1DT0.5S", NOW)?.toISOString()).toBe("2026-03-30T11:59:59.500Z");
  });
  it("refuses what is not a duration", () => {
    for (const bad of ["", "P", "PT", "P1DT", "30D", "P-1D", "P1.5D", "p1d", "P1000Y"]) expect(dateAgo(bad, NOW), bad).toBeUndefined();
    expect(error({ createdAt: { $gt: { $ago: 30 } } }).path).toBe("filter.createdAt.$gt.$ago");
    expect(error({ createdAt: { $gt: { $ago: "P1D", extra: 1 } } }).path).toBe("filter.createdAt.$gt");
  });
});

describe("referencedGroups", () => {
  it("collects every string under a groups key", () => {
    expect(referencedGroups({ $or: [{ groups: "a" }, { $not: { groups: { $in: ["b", 3, "c"] } } }, { firstName: "groups" }] }).sort()).toEqual(["a", "b", "c"]);
  });
});
