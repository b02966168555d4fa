import fc from "fast-check";
import { resolve, type OpenApiDoc, type Operation, type Schema } from "./openapi-model.js";

/**
 * fast-check arbitraries for hostile requests, derived from an operation's schemas: a
 * plausible request with one or more parts replaced by something a client should never send.
 */

export interface HostileRequest {
  method: string;
  rawPath: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What was done to the request, for failure messages. */
  label: string;
}

const PROTO_KEYS = ["__proto__", "constructor", "prototype"];

/** Strings a client should never send, each aimed at a known class of bug. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(
    "", " ", "\u0000", "a\u0000b", "\r\n", "x\r\nBcc: victim@evil.test", "Subject\r\n\r\n<html>body</html>",
    "ann@example.test\r\nX-Injected: 1", "ann@example.test\nBcc: evil@evil.test", "=?utf-8?q?=0D=0ABcc:evil@evil.test?=",
    "../../../../etc/passwd", "..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e", "\\..\\..\\windows", "%00", "%",
    "__proto__", "constructor", "prototype", "{{constructor.constructor('return process')()}}", "{{#each this}}{{/each}}",
    "{{{{raw}}}}", "${process.exit(1)}", "<script>alert(1)</script>", "' OR 1=1 --", "$where", "$gt",
    "\ud800", "\udfff\ud800", "\uffff\ufffe", "\u202e\u0041", "😀".repeat(100), "\u0085\u2028\u2029",
    "NaN", "Infinity", "-0", "1e309", "0x10", "true", "null", "undefined", "[object Object]",
    "a".repeat(1001), "@", "a@", "@b", "a@b@c", "<a@b.c>", "\"quoted\"@example.test", "user@[127.0.0.1]",
  ) },
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  // Huge: up to 200 KB in the long form, 20 KB in the short one (the 413 limits have their own requests).
  fc.integer({ min: 1, max: process.env.HOSTILE_LONG === "1" ? 200_000 : 20_000 }).map((n) => "x".repeat(n)),
);

/** Any JSON-ish value of the wrong kind, including operator objects a store query might honour. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53 + 1, -(2 ** 63), [], {}, [null], { $ne: null }, { $gt: "" }, { $regex: ".*" }, { $where: "1" }),
  hostileString,
  fc.jsonValue({ maxDepth: 3 }),
  // Deeper nesting is sent as raw text (the "deep-array" encoder): JSON.stringify would overflow here.
  fc.integer({ min: 2, max: 1_000 }).map(deepNesting),
);

function deepNesting(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/** A value that satisfies `schema` (mostly), with domain hints for strings the gateway checks. */
export function plausible(doc: OpenApiDoc, schemaIn: Schema | undefined, name = "", depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(doc, schemaIn) ?? {};
  if (depth > 6) return fc.constant(null);
  if ("const" in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s: Schema) => plausible(doc, s, name, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") ?? "null" : schema.type;
  switch (type) {
    case "object": {
      const props: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) record[k] = plausible(doc, s, k, depth + 1);
      if (!Object.keys(record).length) return fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer()), { maxKeys: 3 });
      return fc.record(record, { requiredKeys: [...required].filter((k) => k in record) });
    }
    case "array":
      return fc.array(plausible(doc, schema.items, name, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 });
    case "number":
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "string":
      return plausibleString(name, schema);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function plausibleString(name: string, schema: Schema): fc.Arbitrary<string> {
  const key = name.toLowerCase();
  const local = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
  if (key === "from") return fc.constantFrom("team@acme.test", "Acme <team@acme.test>", "someone@unverified.test");
  // A sender by another name (broadcasts' fromEmail, …): a verified address of workspace A, sometimes not.
  if (key.startsWith("from") && key.includes("email")) return fc.constantFrom("news@acme.test", "someone@unverified.test");
  if (schema.format === "uri" || schema.format === "url" || key.endsWith("url")) return fc.constantFrom("https://hooks.example.test/in", "http://127.0.0.1:9/x", "javascript:alert(1)");
  if (key === "to" || key.includes("email") || schema.format === "email") return local.map((l) => `${l}@fuzz.test`);
  // Webhook event names: a free string array in the document (unknown names are a 400 naming the allowed ones).
  if (key === "events") return fc.constantFrom("EMAIL_SENT", "EMAIL_DELIVERED", "CONTACT_CREATED");
  if (key === "name") return fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/);
  if (key.includes("timezone")) return fc.constantFrom("UTC", "Europe/Paris", "Mars/Olympus");
  if (key.includes("sendat") || schema.format === "date-time") return fc.date({ min: new Date(2020, 0, 1), max: new Date(2030, 0, 1), noInvalidDate: true }).map((d) => d.toISOString());
  if (key === "html") return fc.constantFrom("<p>Hello {{firstName}}</p>", "<html><body><a href=\"https://acme.test/x\">x</a></body></html>");
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 1e9));
  return fc.string({ minLength: Math.max(1, schema.minLength ?? 0), maxLength: Math.min(schema.maxLength ?? 40, 40) });
}

/** Replaces one leaf (or adds one key) of a plausible value with something hostile. */
function mutate(value: unknown): fc.Arbitrary<unknown> {
  if (!value || typeof value !== "object") return wrongValue;
  const keys = Object.keys(value);
  return fc.tuple(
    fc.oneof(fc.constantFrom(...(keys.length ? keys : ["x"])), fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 10 })),
    wrongValue,
  ).map(([k, v]) => {
    // Built as text and parsed: JSON.parse makes `__proto__` an own key, as a hostile client's JSON would.
    const entries = Object.entries(value as object).filter(([name]) => name !== k);
    entries.push([k, v]);
    return JSON.parse(`{${entries.map(([name, val]) => `${JSON.stringify(name)}:${JSON.stringify(val) ?? "null"}`).join(",")}}`);
  });
}

/** Just past the 2 MB body limit of every route but the sends. */
const OVERSIZE_PAD = "x".repeat(2 * 1024 * 1024 + 1);

/** Encodes a JSON-ish value into request bytes, sometimes badly. */
const encoders: fc.Arbitrary<(v: unknown) => { bytes: Buffer; how: string }> = fc.oneof(
  { weight: 6, arbitrary: fc.constant((v: unknown) => ({ bytes: Buffer.from(JSON.stringify(v) ?? "null"), how: "json" })) },
  fc.constant((v: unknown) => {
    // Duplicate keys: the first and a conflicting second value for the first key.
    const text = JSON.stringify(v) ?? "null";
    const dup = text.startsWith("{\"") ? text.replace(/^\{("[^"]*"):/, "{$1:\"dup\",$1:") : text;
    return { bytes: Buffer.from(dup), how: "duplicate-keys" };
  }),
  fc.constant((v: unknown) => {
    const b = Buffer.from(JSON.stringify(v) ?? "null");
    const at = Math.max(0, b.indexOf(0x22, 2) + 1); // inside the first string, where a parser decodes
    return { bytes: Buffer.concat([b.subarray(0, at), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), b.subarray(at)]), how: "invalid-utf8" };
  }),
  fc.constant(() => ({ bytes: Buffer.alloc(0), how: "empty" })),
  fc.constant((v: unknown) => { const t = JSON.stringify(v) ?? "null"; return { bytes: Buffer.from(t.slice(0, Math.max(1, t.length >> 1))), how: "truncated" }; }),
  fc.constant(() => ({ bytes: Buffer.from("[".repeat(100_000)), how: "unclosed-deep" })),
  fc.constant(() => ({ bytes: Buffer.from(`${"[".repeat(20_000)}${"]".repeat(20_000)}`), how: "deep-array" })),
  fc.constant(() => ({ bytes: Buffer.from("\uFEFF{}"), how: "bom" })),
  // Past every route's body limit but the sends' (2 MB elsewhere): 413 or a plain 400.
  fc.constant((v: unknown) => ({ bytes: Buffer.from(JSON.stringify({ pad: OVERSIZE_PAD, v })), how: "oversize" })),
);

const contentTypes = fc.oneof(
  { weight: 8, arbitrary: fc.constant("application/json") },
  fc.constantFrom(
    "", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=utf-16",
    "application/json; charset=latin1", "APPLICATION/JSON", "application/jsonx", "application/vnd.api+json", "*/*", "application/json, text/plain",
  ),
);

/** Percent-encodes UTF-8 bytes (encodeURIComponent throws on lone surrogates). */
export function encodeBytes(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) out += /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  return out;
}

/** A path parameter value and how it is put in the path. */
function pathValue(doc: OpenApiDoc, schema: Schema, name: string, known: string[]): fc.Arbitrary<string> {
  const raw = fc.constantFrom("..", "../..", "%2e%2e", "%2e%2e%2f%2e%2e", "%00", "a%00b", "%ff", "%", "%zz", "%c0%ae%c0%ae", "..%5c..", ";", "a;b=c", "%20", "~", "*", "%2F", "x%2Fy");
  const encoded = fc.oneof(
    hostileString.filter((s) => s.length < 20_000),
    plausible(doc, schema, name).map(String),
    fc.integer({ min: 200, max: 100_000 }).map((n) => "a".repeat(n)),
    ...(known.length ? [fc.constantFrom(...known)] : []),
  ).map(encodeBytes);
  return fc.oneof(raw, encoded);
}

const queryValue = fc.oneof(
  fc.constantFrom("", "-1", "0", "1", "101", "1e3", "NaN", "true", "false", "null", "%00", "%ff", "a%2Cb", "__proto__"),
  hostileString.filter((s) => s.length < 5_000).map(encodeBytes),
);

const badAuth = fc.constantFrom("", "Bearer", "Bearer ", "Bearer  x", "Basic dXNlcjpwYXNz", "bearer x", `Bearer ${"k".repeat(10_000)}`, "Bearer mr_test_%00", "Bearer ' OR 1=1 --");

/** Hostile requests to one operation. `key` authenticates most of them so they reach the handler. */
export function hostileRequest(doc: OpenApiDoc, op: Operation, key: string, known: Record<string, string[]>): fc.Arbitrary<HostileRequest> {
  const params = fc.tuple(...op.pathParams.map((p) => pathValue(doc, p.schema, p.name, known[p.name] ?? [])));
  const query = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...(op.queryParams.length ? op.queryParams.map((q) => q.name) : ["q"])), fc.constantFrom("__proto__", "constructor[prototype]", "a[b]", "%00")), queryValue), { maxLength: 4 });
  const bodyValue = op.jsonBody
    ? fc.oneof(
      { weight: 2, arbitrary: plausible(doc, op.jsonBody) },
      { weight: 5, arbitrary: plausible(doc, op.jsonBody).chain(mutate) },
      { weight: 2, arbitrary: plausible(doc, op.jsonBody).chain(mutate).chain(mutate) },
      { weight: 1, arbitrary: wrongValue },
    )
    : fc.oneof(fc.constant(undefined), wrongValue);
  const sendsBody = op.jsonBody || op.requestMedia.length ? fc.constant(true) : fc.boolean();
  const auth = op.requiresKey ? fc.oneof({ weight: 9, arbitrary: fc.constant(`Bearer ${key}`) }, badAuth) : fc.oneof(fc.constant(""), badAuth);
  const requestId = fc.oneof({ weight: 4, arbitrary: fc.constant("") }, fc.constantFrom("x".repeat(129), "abc def", "id-\u007f", "__proto__", "../.."));
  return fc.record({ params, query, bodyValue, encoder: encoders, contentType: contentTypes, sendsBody, auth, requestId }).map((r) => {
    let i = 0;
    const path = op.path.replace(/\{\w+\}/g, () => r.params[i++] ?? "x");
    const qs = r.query.map(([k, v]) => `${encodeBytes(k)}=${v}`).join("&");
    const headers: Record<string, string> = {};
    if (r.auth) headers.authorization = r.auth;
    if (r.requestId) headers["x-request-id"] = r.requestId.replace(/[^\t\x20-\x7e]/g, "");
    let body: Buffer | undefined;
    let how = "no-body";
    if (r.sendsBody && r.bodyValue !== undefined) {
      const enc = r.encoder(r.bodyValue);
      body = enc.bytes;
      how = enc.how;
      if (r.contentType) headers["content-type"] = r.contentType;
    }
    return { method: op.method, rawPath: qs ? `${path}?${qs}` : path, headers, body, label: `${how} ${r.contentType || "(no content-type)"}` };
  });
}
