/**
 * The Grafana dashboard (deploy/grafana/mailroom-dashboard.json) and the Prometheus alert rules
 * (deploy/prometheus/alerts.yml) read only metrics and labels the processes export: every
 * PromQL expression is lexed, and each metric name, label matcher, grouping label and legend
 * label is checked against the counter()/gauge()/histogram() declarations in services/ and
 * gateway/ (plus the Node process metrics kit turns on), so renaming a metric or a label fails
 * here. With Debian's promtool installed (`apt-get install prometheus`) the rules also go
 * through `promtool check rules` and `promtool test rules` on synthetic series.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import client, { Histogram, Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { optionalProgram } from "../harness/programs.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const RULES_FILE = path.join(ROOT, "deploy/prometheus/alerts.yml");
const DASHBOARD_FILE = path.join(ROOT, "deploy/grafana/mailroom-dashboard.json");

/** Labels Prometheus attaches to every scraped series. */
const TARGET_LABELS = ["job", "instance"];

// ---------- what the processes export ----------

interface Exported {
  labels: Set<string>;
  /** The metric as declared (a histogram's series carry a suffix). */
  declared: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name === "dist" ? [] : sourceFiles(full);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** counter("name", "help", ["label", …]) and the like, as kit's helpers are called. */
const DECLARATION = /\b(counter|gauge|histogram)(?:<[^>(]*>)?\(\s*"([a-zA-Z_:][\w:]*)"\s*,\s*"(?:[^"\\]|\\.)*"\s*(?:,\s*\[([^\]]*)\])?/g;

function declaredInSource(): Map<string, { kind: string; labels: string[] }> {
  const declared = new Map<string, { kind: string; labels: string[] }>();
  for (const file of [...sourceFiles(path.join(ROOT, "services")), ...sourceFiles(path.join(ROOT, "gateway"))]) {
    for (const m of readFileSync(file, "utf8").matchAll(DECLARATION)) {
      const labels = [...(m[3] ?? "").matchAll(/"([^"]+)"/g)].map((l) => l[1]);
      declared.set(m[2], { kind: m[1], labels });
    }
  }
  return declared;
}

/** The Node process metrics of kit's collectProcessMetrics(), as this prom-client version names them. */
function processMetrics(): Map<string, { kind: string; labels: string[] }> {
  const registry = new Registry();
  client.collectDefaultMetrics({ register: registry });
  const metrics = new Map<string, { kind: string; labels: string[] }>();
  for (const metric of registry.getMetricsAsArray() as unknown as { name: string; labelNames?: string[] }[]) {
    metrics.set(metric.name, { kind: metric instanceof Histogram ? "histogram" : "other", labels: metric.labelNames ?? [] });
  }
  registry.clear();
  return metrics;
}

/** Every series name a scrape can hold, with its labels (target labels included). */
function exportedSeries(declared: Map<string, { kind: string; labels: string[] }>): Map<string, Exported> {
  const series = new Map<string, Exported>();
  const add = (name: string, declaredName: string, labels: string[]) => series.set(name, { declared: declaredName, labels: new Set([...labels, ...TARGET_LABELS]) });
  for (const [name, { kind, labels }] of declared) {
    if (kind !== "histogram") {
      add(name, name, labels);
      continue;
    }
    add(`${name}_bucket`, name, [...labels, "le"]);
    add(`${name}_sum`, name, labels);
    add(`${name}_count`, name, labels);
  }
  add("up", "up", []);
  return series;
}

// ---------- PromQL, lexed just enough to name what an expression reads ----------

const FUNCTIONS = new Set(
  ("abs absent absent_over_time ceil changes clamp clamp_max clamp_min day_of_month day_of_week day_of_year days_in_month delta deriv exp floor " +
    "histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta " +
    "increase irate label_join label_replace ln log2 log10 minute month predict_linear rate resets round scalar sgn sort sort_desc sqrt time " +
    "timestamp vector year avg_over_time min_over_time max_over_time sum_over_time count_over_time quantile_over_time stddev_over_time " +
    "stdvar_over_time last_over_time present_over_time acos acosh asin asinh atan atanh cos cosh sin sinh tan tanh deg pi rad " +
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile").split(" "),
);
const GROUPING = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"]);

interface Token {
  kind: "ident" | "string" | "number" | "open" | "close" | "range" | "variable" | "op";
  text: string;
}

/** Tokens of a PromQL expression; throws on an unterminated string or unbalanced brackets. */
function lex(expr: string): Token[] {
  const tokens: Token[] = [];
  const stack: string[] = [];
  const pairs: Record<string, string> = { ")": "(", "}": "{", "]": "[" };
  let i = 0;
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === "\\" && c !== "`" ? 2 : 1;
      if (j >= expr.length) throw new Error(`unterminated string at ${i}`);
      tokens.push({ kind: "string", text: expr.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "[") {
      // A range or subquery: [5m], [$__rate_interval], [1h:5m]. Nothing inside names a metric.
      const j = expr.indexOf("]", i);
      if (j < 0 || /[[({})]/.test(expr.slice(i + 1, j))) throw new Error(`unbalanced [ at ${i}`);
      tokens.push({ kind: "range", text: expr.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "(" || c === "{") {
      stack.push(c);
      tokens.push({ kind: "open", text: c });
      i++;
    } else if (c === ")" || c === "}" || c === "]") {
      if (stack.pop() !== pairs[c]) throw new Error(`unbalanced ${c} at ${i}`);
      tokens.push({ kind: "close", text: c });
      i++;
    } else if (c === "$") {
      const m = /^\$(\{[^}]*\}|\w+)/.exec(expr.slice(i));
      if (!m) throw new Error(`stray $ at ${i}`);
      tokens.push({ kind: "variable", text: m[0] });
      i += m[0].length;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const m = /^[a-zA-Z_:][\w:]*/.exec(expr.slice(i))!;
      tokens.push({ kind: "ident", text: m[0] });
      i += m[0].length;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(\d*\.?\d+(?:[eE][-+]?\d+)?)(?:[smhdwy]|ms)*/.exec(expr.slice(i));
      if (!m) throw new Error(`bad number at ${i}`);
      tokens.push({ kind: "number", text: m[0] });
      i += m[0].length;
    } else {
      const m = /^(=~|!~|!=|==|>=|<=|[-+*/%^=<>,@!])/.exec(expr.slice(i));
      if (!m) throw new Error(`unexpected ${c} at ${i}`);
      tokens.push({ kind: "op", text: m[0] });
      i += m[0].length;
    }
  }
  if (stack.length) throw new Error(`unclosed ${stack.join("")}`);
  return tokens;
}

interface Reading {
  metrics: Set<string>;
  /** Label matchers by the metric they select on. */
  matchers: { metric: string; label: string }[];
  grouping: Set<string>;
  functions: Set<string>;
}

/** What an expression reads: metric names, label matchers, grouping labels, functions. */
function read(expr: string): Reading {
  const tokens = lex(expr);
  const reading: Reading = { metrics: new Set(), matchers: [], grouping: new Set(), functions: new Set() };
  const context: { kind: "selector" | "grouping" | "call"; metric?: string }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    const previous = tokens[i - 1];
    const next = tokens[i + 1];
    const inside = context.at(-1);
    if (token.kind === "open") {
      if (token.text === "{") {
        if (previous?.kind !== "ident") throw new Error(`a selector without a metric name in ${expr}`);
        context.push({ kind: "selector", metric: previous.text });
      } else {
        context.push({ kind: previous?.kind === "ident" && GROUPING.has(previous.text) ? "grouping" : "call" });
      }
      continue;
    }
    if (token.kind === "close") {
      context.pop();
      continue;
    }
    if (token.kind !== "ident") continue;
    if (inside?.kind === "selector") {
      if (previous.text === "{" || previous.text === ",") reading.matchers.push({ metric: inside.metric!, label: token.text });
      continue;
    }
    if (inside?.kind === "grouping") {
      reading.grouping.add(token.text);
      continue;
    }
    if (GROUPING.has(token.text) || KEYWORDS.has(token.text.toLowerCase())) continue;
    // A call, or an aggregation whose grouping comes first: sum by (lane) (…).
    if ((next?.kind === "open" && next.text === "(") || (next?.kind === "ident" && (next.text === "by" || next.text === "without"))) reading.functions.add(token.text);
    else reading.metrics.add(token.text);
  }
  return reading;
}

/** Problems with an expression against what is exported; [] when it reads only real series and labels. */
function problems(expr: string, series: Map<string, Exported>, legend = ""): string[] {
  let reading: Reading;
  try {
    reading = read(expr);
  } catch (err) {
    return [`${(err as Error).message}: ${expr}`];
  }
  const found: string[] = [];
  for (const fn of reading.functions) if (!FUNCTIONS.has(fn)) found.push(`unknown function ${fn}`);
  const available = new Set<string>(TARGET_LABELS);
  for (const metric of reading.metrics) {
    const exported = series.get(metric);
    if (!exported) found.push(`metric ${metric} is not exported`);
    else for (const label of exported.labels) available.add(label);
  }
  for (const { metric, label } of reading.matchers) {
    const exported = series.get(metric);
    if (exported && !exported.labels.has(label)) found.push(`${metric} has no label ${label}`);
  }
  for (const label of reading.grouping) if (!available.has(label)) found.push(`grouping by ${label}, which none of its metrics has`);
  for (const m of legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)) if (!available.has(m[1])) found.push(`legend names ${m[1]}, which none of its metrics has`);
  return found.map((p) => `${p} (in ${expr.replace(/\s+/g, " ").trim()})`);
}

// ---------- the files ----------

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; interval?: string; rules: Rule[] }[];
}

interface Target {
  refId: string;
  expr: string;
  legendFormat?: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: string | { query: string }; definition?: string; datasource?: { type: string; uid: string } }[] };
  panels: Panel[];
}

const declared = new Map([...processMetrics(), ...declaredInSource()]);
const series = exportedSeries(declared);
const rules = YAML.parse(readFileSync(RULES_FILE, "utf8"), { strict: true, uniqueKeys: true }) as RuleFile;
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as Dashboard;
const allRules = rules.groups.flatMap((g) => g.rules);
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const allTargets = allPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

describe("the metrics the files may read", () => {
  it("are found in the source: the delivery, route, queue, HTTP, RPC and store metrics and the process metrics kit turns on", () => {
    for (const name of [
      "mailroom_http_requests_total",
      "mailroom_http_request_duration_seconds_bucket",
      "mailroom_rpc_server_handled_total",
      "mailroom_jetstream_consumer_pending_messages",
      "mailroom_delivery_messages_total",
      "mailroom_delivery_route_messages_total",
      "mailroom_delivery_route_up",
      "mailroom_store_operation_duration_seconds_count",
      "process_cpu_seconds_total",
      "nodejs_eventloop_lag_p99_seconds",
    ]) {
      expect(series.has(name), name).toBe(true);
    }
    expect([...series.get("mailroom_delivery_route_messages_total")!.labels].sort()).toEqual(["domain", "instance", "job", "outcome", "route"]);
    expect(readFileSync(path.join(ROOT, "services/kit/src/metrics.ts"), "utf8")).toContain("collectDefaultMetrics(");
  });

  it("the checker refuses what is not exported: a renamed metric, a wrong label, an unknown function, unbalanced brackets", () => {
    expect(problems('sum by (lane) (rate(mailroom_delivery_messages_total{outcome="sent"}[5m]))', series)).toEqual([]);
    expect(problems("rate(mailroom_delivery_message_total[5m])", series).join()).toMatch(/metric mailroom_delivery_message_total is not exported/);
    expect(problems('rate(mailroom_delivery_messages_total{result="sent"}[5m])', series).join()).toMatch(/has no label result/);
    expect(problems("sum by (stream) (rate(mailroom_delivery_messages_total[5m]))", series).join()).toMatch(/grouping by stream/);
    expect(problems("rate(mailroom_delivery_messages_total[5m])", series, "{{route}}").join()).toMatch(/legend names route/);
    expect(problems("histogram_quantle(0.9, rate(mailroom_http_request_duration_seconds_bucket[5m]))", series).join()).toMatch(/unknown function/);
    expect(problems("sum(rate(mailroom_delivery_messages_total[5m])", series).join()).toMatch(/unclosed|unbalanced/);
    expect(problems('up{job="x"))', series).join()).toMatch(/unbalanced/);
  });
});

describe("deploy/prometheus/alerts.yml", () => {
  it("is a rule file whose every alert has an expression, a for, a severity, a summary and a description", () => {
    expect(rules.groups.length).toBeGreaterThan(0);
    expect(new Set(rules.groups.map((g) => g.name)).size).toBe(rules.groups.length);
    const names = allRules.map((r) => r.alert);
    expect(new Set(names).size, "alert names are unique").toBe(names.length);
    for (const rule of allRules) {
      const name = rule.alert ?? rule.record;
      expect(rule.alert, "only alerting rules").toMatch(/^Mailroom[A-Z]\w+$/);
      expect(typeof rule.expr, name).toBe("string");
      expect(rule.for, `${name}: for`).toMatch(/^\d+[smh]$/);
      expect(["critical", "warning", "info"], `${name}: severity`).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, `${name}: summary`).toBeTruthy();
      expect(rule.annotations?.description, `${name}: description`).toBeTruthy();
      expect(Object.keys(rule).sort(), name).toEqual(["alert", "annotations", "expr", "for", "labels"]);
    }
  });

  it("covers queue lag, delivery failures and deferrals, routes, units down, gateway errors and event-loop lag", () => {
    const names = allRules.map((r) => r.alert);
    for (const wanted of [
      "MailroomUnitDown",
      "MailroomQueueLagGrowing",
      "MailroomDeliveryFailureRatioHigh",
      "MailroomDeliveryDeferralRatioHigh",
      "MailroomDeliveryRouteDown",
      "MailroomGateway5xxRatioHigh",
      "MailroomEventLoopLagHigh",
    ]) {
      expect(names).toContain(wanted);
    }
  });

  it("reads only exported metrics and labels, and its annotations only labels its expression has", () => {
    const found = allRules.flatMap((rule) => {
      const own = problems(rule.expr, series).map((p) => `${rule.alert}: ${p}`);
      const reading = read(rule.expr);
      // A rule that aggregates keeps only its grouping labels.
      const kept = reading.grouping.size
        ? new Set(reading.grouping)
        : new Set([...reading.metrics].flatMap((m) => [...(series.get(m)?.labels ?? [])]));
      const text = Object.values(rule.annotations ?? {}).join("\n");
      for (const m of text.matchAll(/\$labels\.(\w+)/g)) if (!kept.has(m[1])) own.push(`${rule.alert}: annotations name $labels.${m[1]}, which the alert does not carry`);
      return own;
    });
    expect(found).toEqual([]);
  });
});

describe("deploy/grafana/mailroom-dashboard.json", () => {
  it("is a Grafana dashboard with a Prometheus data source variable, unique panel ids and panels that do not overlap", () => {
    expect(dashboard.uid).toBeTruthy();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const datasource = dashboard.templating.list.find((v) => v.name === "datasource");
    expect(datasource).toMatchObject({ type: "datasource", query: "prometheus" });
    const ids = allPanels.map((p) => p.id);
    expect(new Set(ids).size, "panel ids are unique").toBe(ids.length);
    for (const panel of allPanels) {
      const { x, w, h } = panel.gridPos;
      expect(x + w <= 24 && w > 0 && h > 0, `${panel.title}: inside the 24-column grid`).toBe(true);
      if (panel.type === "row") continue;
      expect(panel.datasource, panel.title).toEqual({ type: "prometheus", uid: "${datasource}" });
      expect(panel.targets?.length, `${panel.title} has queries`).toBeGreaterThan(0);
      const refIds = panel.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, `${panel.title}: refIds are unique`).toBe(refIds.length);
    }
    const overlaps = (a: Panel["gridPos"], b: Panel["gridPos"]) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (let i = 0; i < allPanels.length; i++) {
      for (let j = i + 1; j < allPanels.length; j++) {
        expect(overlaps(allPanels[i].gridPos, allPanels[j].gridPos), `${allPanels[i].title} overlaps ${allPanels[j].title}`).toBe(false);
      }
    }
  });

  it("reads only exported metrics and labels in every panel query, legend and variable", () => {
    const found = allTargets.flatMap((t) => problems(t.expr, series, t.legendFormat).map((p) => `${t.panel}: ${p}`));
    for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
      const query = typeof variable.query === "string" ? variable.query : variable.query.query;
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(query);
      if (!m) {
        found.push(`variable ${variable.name}: not label_values(selector, label): ${query}`);
        continue;
      }
      found.push(...problems(m[1], series).map((p) => `variable ${variable.name}: ${p}`));
      const metric = [...read(m[1]).metrics][0];
      if (!series.get(metric)?.labels.has(m[2])) found.push(`variable ${variable.name}: ${metric} has no label ${m[2]}`);
      expect(variable.datasource).toEqual({ type: "prometheus", uid: "${datasource}" });
    }
    expect(found).toEqual([]);
  });

  it("shows every mailroom_* metric the source declares (a new metric gets a panel)", () => {
    const read_ = new Set(allTargets.flatMap((t) => [...read(t.expr).metrics].map((m) => series.get(m)?.declared)));
    const missing = [...declared.keys()].filter((name) => name.startsWith("mailroom_") && !read_.has(name));
    expect(missing).toEqual([]);
  });
});

// ---------- promtool, when Debian's prometheus package is installed ----------

const promtool = optionalProgram("promtool", "test/ops/observability-files (promtool)");

describe.skipIf(!promtool)("promtool", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "mailroom-rules-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("check rules accepts the file", () => {
    const run = spawnSync("promtool", ["check", "rules", RULES_FILE], { encoding: "utf8" });
    expect(run.stdout + run.stderr).toMatch(/SUCCESS: \d+ rules found/);
    expect(run.status).toBe(0);
  });

  it("test rules: each alert fires on the series it is about, and not on healthy ones", () => {
    // The same rules without annotations, whose rendered text the expectations need not repeat.
    const bare = { groups: rules.groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _, ...rule }) => rule) })) };
    writeFileSync(path.join(dir, "rules.yml"), YAML.stringify(bare));
    const gw = { job: "mailroom-gateway", instance: "gateway:8080" };
    const dl = { job: "mailroom-services", instance: "delivery:7105" };
    const s = (name: string, labels: Record<string, string>, values: string) => ({
      series: `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(", ")}}`,
      values,
    });
    const fired = (alertname: string, eval_time: string, ...labels: Record<string, string>[]) => ({
      alertname,
      eval_time,
      exp_alerts: labels.map((l) => ({ exp_labels: l })),
    });
    const tests = {
      rule_files: [path.join(dir, "rules.yml")],
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: [
            s("up", dl, "1 1 0x20"),
            s("up", gw, "1x22"),
            s("mailroom_delivery_route_up", { ...dl, route: "ses" }, "1 0x20"),
            s("mailroom_delivery_route_up", { ...dl, route: "relay" }, "1x21"),
            s("nodejs_eventloop_lag_p99_seconds", gw, "0.6x21"),
            s("nodejs_eventloop_lag_p99_seconds", dl, "0.01x21"),
            s("mailroom_http_requests_total", { ...gw, method: "POST", route: "/v1/emails", status: "202" }, "0+60x21"),
            s("mailroom_http_requests_total", { ...gw, method: "POST", route: "/v1/emails", status: "503" }, "0+30x21"),
          ],
          alert_rule_test: [
            fired("MailroomUnitDown", "1m"),
            fired("MailroomUnitDown", "5m", { severity: "critical", ...dl }),
            fired("MailroomDeliveryRouteDown", "4m"),
            fired("MailroomDeliveryRouteDown", "8m", { severity: "warning", ...dl, route: "ses" }),
            fired("MailroomDeliveryNoRouteUp", "8m"),
            fired("MailroomEventLoopLagHigh", "12m", { severity: "warning", ...gw }),
            fired("MailroomGateway5xxRatioHigh", "12m", { severity: "critical", job: gw.job }),
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Growing 200 a minute, handled all along: lag growing, not stalled.
            s("mailroom_jetstream_consumer_pending_messages", { ...dl, stream: "MAIL_DELIVERY", durable: "delivery-broadcast" }, "0+200x40"),
            s("mailroom_jetstream_messages_handled_total", { ...dl, stream: "MAIL_DELIVERY", durable: "delivery-broadcast", result: "ack" }, "0+100x40"),
            // Large but flat, handled: neither.
            s("mailroom_jetstream_consumer_pending_messages", { ...dl, stream: "MAIL_DELIVERY", durable: "delivery-transactional" }, "5000x40"),
            s("mailroom_jetstream_messages_handled_total", { ...dl, stream: "MAIL_DELIVERY", durable: "delivery-transactional", result: "ack" }, "0+100x40"),
            // A backlog and nothing handled: stalled.
            s("mailroom_jetstream_consumer_pending_messages", { job: "mailroom-services", instance: "webhooks:7107", stream: "MAIL_EVENTS", durable: "webhooks-dispatch" }, "50x40"),
            s("mailroom_jetstream_messages_handled_total", { job: "mailroom-services", instance: "webhooks:7107", stream: "MAIL_EVENTS", durable: "webhooks-dispatch", result: "ack" }, "100x40"),
            s("mailroom_jetstream_messages_handled_total", { ...dl, stream: "MAIL_DELIVERY", durable: "delivery-transactional", result: "term" }, "0x10 1x30"),
          ],
          alert_rule_test: [
            fired("MailroomQueueLagGrowing", "10m"),
            fired("MailroomQueueLagGrowing", "30m", { severity: "warning", stream: "MAIL_DELIVERY", durable: "delivery-broadcast" }),
            fired("MailroomConsumerStalled", "30m", { severity: "critical", stream: "MAIL_EVENTS", durable: "webhooks-dispatch" }),
            fired("MailroomMessagesTerminated", "5m"),
            fired("MailroomMessagesTerminated", "13m", { severity: "warning", stream: "MAIL_DELIVERY", durable: "delivery-transactional" }),
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Transactional: 20% bounced. Broadcast: 1% bounced, 40% deferred.
            s("mailroom_delivery_messages_total", { ...dl, lane: "transactional", outcome: "sent" }, "0+8x40"),
            s("mailroom_delivery_messages_total", { ...dl, lane: "transactional", outcome: "bounced" }, "0+2x40"),
            s("mailroom_delivery_messages_total", { ...dl, lane: "broadcast", outcome: "sent" }, "0+59x40"),
            s("mailroom_delivery_messages_total", { ...dl, lane: "broadcast", outcome: "bounced" }, "0+1x40"),
            s("mailroom_delivery_messages_total", { ...dl, lane: "broadcast", outcome: "deferred" }, "0+40x40"),
            s("mailroom_delivery_route_messages_total", { ...dl, route: "ses", domain: "example.com", outcome: "sent" }, "0+10x40"),
            s("mailroom_delivery_route_messages_total", { ...dl, route: "ses", domain: "example.com", outcome: "failed" }, "0+5x40"),
            s("mailroom_delivery_route_messages_total", { ...dl, route: "relay", domain: "example.com", outcome: "sent" }, "0+50x40"),
          ],
          alert_rule_test: [
            fired("MailroomDeliveryFailureRatioHigh", "5m"),
            fired("MailroomDeliveryFailureRatioHigh", "20m", { severity: "critical", lane: "transactional" }),
            fired("MailroomDeliveryDeferralRatioHigh", "25m", { severity: "warning", lane: "broadcast" }),
            fired("MailroomDeliveryRouteFailureRatioHigh", "20m", { severity: "warning", route: "ses" }),
          ],
        },
      ],
    };
    const file = path.join(dir, "tests.yml");
    writeFileSync(file, YAML.stringify(tests));
    const run = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
    expect(run.stdout + run.stderr).toMatch(/SUCCESS/);
    expect(run.status).toBe(0);
  });
});
