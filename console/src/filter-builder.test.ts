import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { parseFilter } from "@mailroom/filter/filter.js";
import { create } from "@bufbuild/protobuf";
import { ContactPropertySchema, PropertyType } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupSchema } from "@mailroom/proto/audience/v1/groups_pb.js";
import { FILTER_BUILDER_JS, builderFields, filterBuilderHtml, scriptJson, type BuilderField } from "./filter-builder.js";

interface Row { field: string; op: string; value: string }
interface Builder {
  build(join: string, rows: Row[], fields: BuilderField[]): { filter?: unknown; error?: string; row?: number };
  rows(filter: unknown, fields: BuilderField[]): { join: string; rows: Row[] } | null;
  ops(kind: string): Array<{ op: string }>;
}

// Exactly the code the page runs, evaluated in a fresh context.
const builder = vm.runInNewContext(`${FILTER_BUILDER_JS}; ({ build: mrBuildFilter, rows: mrRowsFromFilter, ops: mrOpsFor })`) as Builder;
const plain = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

const fields = builderFields(
  [
    create(ContactPropertySchema, { slug: "plan", type: PropertyType.SELECT, options: [{ value: "pro" }, { value: "free" }] }),
    create(ContactPropertySchema, { slug: "seats", type: PropertyType.NUMBER }),
    create(ContactPropertySchema, { slug: "vip", type: PropertyType.BOOLEAN }),
    create(ContactPropertySchema, { slug: "renewal", type: PropertyType.DATE }),
    create(ContactPropertySchema, { slug: "city", type: PropertyType.STRING, builtIn: true }),
  ],
  [create(GroupSchema, { id: "grp_01", publicId: "beta", displayName: "Beta testers" })],
);
const ctx = {
  properties: new Map([["plan", "select"], ["seats", "number"], ["vip", "boolean"], ["renewal", "date"]] as const),
  groupIdOf: (id: string) => (id === "grp_01" || id === "beta" ? "grp_01" : undefined),
  now: new Date("2026-01-01T00:00:00Z"),
};

describe("filter builder: rows to the filter language", () => {
  it("offers built-ins, custom properties (not built-in ones), groups and engagement", () => {
    const keys = fields.map((f) => f.key);
    expect(keys).toEqual(expect.arrayContaining(["email", "status", "createdAt", "properties.plan", "properties.seats", "groups", "engagement.opened"]));
    expect(keys).not.toContain("properties.city");
    expect(fields.find((f) => f.key === "groups")!.values).toEqual([{ value: "grp_01", label: "Beta testers (beta)", alt: "beta" }]);
    expect(fields.find((f) => f.key === "properties.plan")!.values!.map((v) => v.value)).toEqual(["pro", "free"]);
    // Every operator the builder offers is one the language allows for that kind.
    const map: Record<string, string> = { eq: "$eq", ne: "$ne", gt: "$gt", gte: "$gte", lt: "$lt", lte: "$lte", contains: "$contains", startsWith: "$startsWith", endsWith: "$endsWith", in: "$in", nin: "$nin", exists: "$exists", notExists: "$exists", withinDays: "$gte", olderDays: "$lt", after: "$gt", before: "$lt" };
    for (const f of fields.filter((x) => x.kind !== "engagement")) {
      for (const { op } of builder.ops(f.kind)) expect(f.allowed, `${f.key} ${op}`).toContain(map[op]);
    }
  });

  const cases: Array<[string, string, Row[], unknown]> = [
    ["no rows is everyone", "and", [], {}],
    ["one row is the bare condition", "and", [{ field: "email", op: "contains", value: " example.com " }], { email: { $contains: "example.com" } }],
    ["equality is a bare value", "and", [{ field: "status", op: "eq", value: "SUBSCRIBED" }], { status: "SUBSCRIBED" }],
    ["AND of rows", "and", [{ field: "properties.plan", op: "eq", value: "pro" }, { field: "properties.seats", op: "gte", value: "5" }],
      { $and: [{ "properties.plan": "pro" }, { "properties.seats": { $gte: 5 } }] }],
    ["OR of rows", "or", [{ field: "groups", op: "eq", value: "grp_01" }, { field: "properties.vip", op: "eq", value: "true" }],
      { $or: [{ groups: "grp_01" }, { "properties.vip": true }] }],
    ["not in a group", "and", [{ field: "groups", op: "ne", value: "grp_01" }], { groups: { $ne: "grp_01" } }],
    ["lists split on commas, numbers typed", "and", [{ field: "properties.seats", op: "in", value: "1, 2,,3" }], { "properties.seats": { $in: [1, 2, 3] } }],
    ["relative dates", "and", [{ field: "createdAt", op: "withinDays", value: "30" }, { field: "properties.renewal", op: "olderDays", value: "7" }],
      { $and: [{ createdAt: { $gte: { $ago: "P30D" } } }, { "properties.renewal": { $lt: { $ago: "P7D" } } }] }],
    ["absolute dates", "and", [{ field: "updatedAt", op: "before", value: "2025-06-01" }], { updatedAt: { $lt: "2025-06-01" } }],
    ["is set / not set", "and", [{ field: "lastName", op: "notExists", value: "ignored" }], { lastName: { $exists: false } }],
    ["engagement ever", "and", [{ field: "engagement.opened", op: "ever", value: "" }], { $engagement: { event: "opened" } }],
    ["engagement in the last days", "and", [{ field: "engagement.clicked", op: "within", value: "90" }], { $engagement: { event: "clicked", since: { $ago: "P90D" } } }],
    ["no engagement lately", "and", [{ field: "engagement.opened", op: "notWithin", value: "60" }], { $not: { $engagement: { event: "opened", since: { $ago: "P60D" } } } }],
    ["engagement at least n times", "and", [{ field: "engagement.delivered", op: "atLeast", value: "3" }], { $engagement: { event: "delivered", min: 3 } }],
  ];
  for (const [name, join, rows, expected] of cases) {
    it(`${name}: builds, the language accepts it, and it reads back into the same rows`, () => {
      const out = plain(builder.build(join, rows, fields));
      expect(out).toEqual({ filter: expected });
      const parsed = parseFilter(out.filter, ctx);
      expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
      const back = plain(builder.rows(out.filter, fields));
      expect(back).not.toBeNull();
      expect(plain(builder.build(back!.join, back!.rows, fields))).toEqual({ filter: expected });
    });
  }

  it("names the row and the problem of an incomplete row", () => {
    expect(plain(builder.build("and", [{ field: "email", op: "eq", value: "a@b.c" }, { field: "properties.seats", op: "gt", value: "many" }], fields)))
      .toEqual({ error: "enter a number", row: 1 });
    expect(plain(builder.build("and", [{ field: "createdAt", op: "withinDays", value: "0" }], fields)).row).toBe(0);
    expect(plain(builder.build("and", [{ field: "email", op: "eq", value: "  " }], fields)).error).toBe("enter a value");
    expect(plain(builder.build("and", [{ field: "nope", op: "eq", value: "x" }], fields)).error).toBe("choose a field");
    expect(plain(builder.build("and", [{ field: "status", op: "contains", value: "x" }], fields)).error).toBe("choose an operator");
  });

  it("leaves filters the rows cannot express to the JSON editor", () => {
    for (const f of [
      { $or: [{ email: "a@b.c" }, { $and: [{ firstName: "A" }, { lastName: "B" }] }] },
      { "properties.seats": { $gt: 1, $lt: 5 } },
      { $engagement: { event: "opened", broadcastId: "cmp_1" } },
      { unknownField: "x" },
      { createdAt: { $gte: { $ago: "P1M" } } },
      { $and: [] },
      [],
      "text",
    ]) expect(builder.rows(f, fields), JSON.stringify(f)).toBeNull();
    // A group named by its publicId is shown as the group (its id).
    expect(plain(builder.rows({ groups: { $ne: "beta" } }, fields))).toEqual({ join: "and", rows: [{ field: "groups", op: "ne", value: "grp_01" }] });
    // Several keys in one object are an AND of rows.
    expect(plain(builder.rows({ email: { $endsWith: "@x.test" }, status: "SUBSCRIBED" }, fields))).toEqual({
      join: "and", rows: [{ field: "email", op: "endsWith", value: "@x.test" }, { field: "status", op: "eq", value: "SUBSCRIBED" }],
    });
  });

  it("embeds the field list so no value can close the script element", () => {
    const page = filterBuilderHtml({ fields: [{ key: "x", label: "</script><script>alert(1)</script>", kind: "text", allowed: [] }], filterJson: '{"email":"</textarea>"}', countUrl: "/console/segments/count.json" });
    expect(page).not.toContain("</script><script>alert(1)");
    expect(page).toContain("&lt;/textarea&gt;");
    const attr = filterBuilderHtml({ fields: [], filterJson: "{}", countUrl: '/x"><script>alert(1)</script>', textareaName: 'f"' });
    expect(attr).toContain('data-count-url="/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" hidden>');
    expect(attr).toContain('<textarea id="fb-json" name="f&quot;" rows="8"');
    expect(JSON.parse(scriptJson({ a: "</script>&" }))).toEqual({ a: "</script>&" });
  });
});
