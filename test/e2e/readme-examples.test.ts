/**
 * The README's examples, as a new user runs them: `npm start` (a fresh data dir, a free gateway
 * port), then every command of every ```sh block of README.md, then of each page under docs/ in the
 * order the README's Documentation table links them, in order, each in bash from the
 * repository's folder (a block that cannot run in a test is a ```text block, or in SKIPPED_BLOCKS). A command fails the test when it exits non-zero; curl runs with
 * --fail-with-body, so an HTTP error answer is a failure too. The examples stay written for
 * humans (`localhost:8080`, `./.mailroom/`): only those two are replaced by this run's gateway
 * port and data dir, and `npx mailroom` is pointed at this run's accounts and audience units
 * (MAILROOM_ACCOUNTS_URL and MAILROOM_AUDIENCE_URL, from the banner). Shell variables an example sets (KEY, ID) carry over to the next commands.
 * Then the first broadcast must have reached its recipients (into /dev/mail), and a SIGTERM to
 * npm, what a process manager sends, must stop every unit and nats-server.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAlive } from "../../deploy/nats-server.js";
import { REPO_ROOT } from "../../deploy/processes.js";
import { signalGroup } from "../../deploy/supervisor.js";
import { freePort } from "../harness/ports.js";

/** Blocks that are not examples to run against the system, by the start of their first line, and why. */
const SKIPPED_BLOCKS: Array<{ firstLine: string; why: string }> = [
  { firstLine: "npm ci && npm start ", why: "installs and starts the system (this test starts it the same way); its second line, npm test, runs every suite, this one included" },
];

/** Commands whose documented outcome is another exit code. */
const EXPECTED_EXIT: Array<{ command: RegExp; codes: number[]; why: string }> = [
  { command: /^npx mailroom .*domain verify /, codes: [2], why: "exit code 2 is its documented answer until the DNS records are published, which no test can do for acme.com" },
];

interface Block { file: string; line: number; text: string }

/** Every ```sh block of a Markdown file, with the line it starts at. */
function shellBlocks(file: string, readme: string): Block[] {
  const blocks: Block[] = [];
  const lines = readme.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```sh") continue;
    const start = i + 1;
    while (++i < lines.length && lines[i] !== "```");
    blocks.push({ file, line: start + 1, text: lines.slice(start, i).join("\n") });
  }
  return blocks;
}

/** A block's commands: physical lines joined where one ends with `\`, without blank and comment lines. */
function commandsOf(block: string): string[] {
  const commands: string[] = [];
  let current: string[] = [];
  for (const line of block.split("\n")) {
    if (current.length === 0 && (line.trim() === "" || line.trim().startsWith("#"))) continue;
    current.push(line);
    if (!line.endsWith("\\")) {
      commands.push(current.join("\n"));
      current = [];
    }
  }
  if (current.length) commands.push(current.join("\n"));
  return commands;
}

const README = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
/** The docs pages in the order the README links them (its Documentation table). */
const DOC_PAGES = [...new Set([...README.matchAll(/\]\(docs\/([a-z0-9-]+\.md)\)/g)].map((m) => `docs/${m[1]}`))];
const MARKDOWN = ["README.md", ...DOC_PAGES];
const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), "utf8");

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`. */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-");
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (m) anchors.add(anchorOf(m[1]!));
  }
  return anchors;
}

describe("README and docs/", () => {
  it("the README links every page of docs/, and is at most 300 lines", () => {
    const pages = readdirSync(path.join(REPO_ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
    expect(pages.filter((p) => !DOC_PAGES.includes(p)), "pages the README does not link").toEqual([]);
    expect(README.split("\n").length).toBeLessThanOrEqual(301);
  });

  it("has no link to a missing file or heading, nor a reference to files outside the repository", () => {
    const broken: string[] = [];
    for (const file of MARKDOWN) {
      const text = read(file);
      if (/\.\.\/shared|DESIGN(\.md| §)/.test(text)) broken.push(`${file}: names a file outside the repository`);
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [where, anchor] = target.split("#") as [string, string | undefined];
        const linked = where ? path.normalize(path.join(path.dirname(file), where)) : file;
        if (!existsSync(path.join(REPO_ROOT, linked))) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && linked.endsWith(".md") && !anchorsOf(read(linked)).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("README examples against npm start", () => {
  let dataDir: string;
  let httpPort: number;
  let npm: ChildProcess;
  let output = "";
  const pids = new Set<number>();
  const tail = () => output.slice(-4_000);

  const pidsNow = () => {
    const runDir = path.join(dataDir, "run");
    if (!existsSync(runDir)) return [];
    return readdirSync(runDir).filter((f) => f.endsWith(".pid")).map((f) => Number(readFileSync(path.join(runDir, f), "utf8").trim())).filter((p) => p > 0);
  };

  async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; npm start's output:\n${tail()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-readme-"));
    httpPort = await freePort();
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MAILROOM_") && !k.startsWith("npm_") && k !== "NODE_ENV"));
    npm = spawn("npm", ["start"], {
      cwd: REPO_ROOT,
      env: { ...env, PATH: `${env.PATH}:/usr/sbin`, MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: String(httpPort), MAILROOM_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so a failing test can take down everything it started.
      detached: true,
    });
    npm.stdout!.on("data", (d) => (output += d));
    npm.stderr!.on("data", (d) => (output += d));
    await waitFor("Mailroom is running", () => {
      if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm start exited (${npm.exitCode ?? npm.signalCode}):\n${tail()}`);
      return output.includes("Mailroom is running.") || undefined;
    }, 180_000);
    for (const pid of pidsNow()) pids.add(pid);
  }, 200_000);

  afterAll(async () => {
    if (npm?.pid && npm.exitCode === null && npm.signalCode === null) signalGroup(npm.pid, "SIGKILL");
    for (const pid of [...pids, ...(dataDir ? pidsNow() : [])]) signalGroup(pid, "SIGKILL");
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("runs every shell example of the README and docs/ as written, in order, without an error answer", async () => {
    const blocks = MARKDOWN.flatMap((file) => shellBlocks(file, read(file)));
    for (const skip of SKIPPED_BLOCKS) {
      expect(blocks.filter((b) => b.text.startsWith(skip.firstLine)).length, `skipped block "${skip.firstLine}" is in the README or docs/ once`).toBe(1);
    }
    const toRun = blocks.filter((b) => !SKIPPED_BLOCKS.some((s) => b.text.startsWith(s.firstLine)));
    expect(toRun.length).toBeGreaterThanOrEqual(7);

    // npx mailroom reaches this run's accounts and audience units: the banner names their URLs
    // ("accounts at <url>, audience at <url>"), or the variables to export for those whose
    // default port was taken (the others are at their defaults, where the CLI looks anyway).
    const banner = /Admin CLI: +(.*)/.exec(output)?.[1] ?? "";
    const cliUrls: Record<string, string> = {};
    for (const m of banner.matchAll(/\b(accounts|audience) at (http:\/\/[^\s,)]+)/g)) cliUrls[`MAILROOM_${m[1]!.toUpperCase()}_URL`] = m[2]!;
    for (const m of banner.matchAll(/export ((?:MAILROOM_(?:ACCOUNTS|AUDIENCE)_URL=\S+ ?)+)/g)) {
      for (const pair of m[1]!.trim().split(" ")) cliUrls[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1);
    }
    expect(Object.keys(cliUrls).length, `the banner names where the CLI finds the accounts and audience units:\n${tail()}`).toBeGreaterThan(0);
    const shellEnv = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MAILROOM_") && !k.startsWith("npm_"))),
      ...cliUrls,
    };
    const variables = [...new Set(toRun.flatMap((b) => [...b.text.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((m) => m[1]!)))];
    const state = path.join(dataDir, "readme-shell-state.sh");
    const substitute = (command: string) =>
      command.replaceAll("localhost:8080", `localhost:${httpPort}`).replaceAll("./.mailroom/", `${dataDir}/`);

    const ran: string[] = [];
    for (const block of toRun) {
      for (const command of commandsOf(block.text)) {
        const script = [
          "set -o pipefail",
          `[ -f '${state}' ] && source '${state}'`,
          // An HTTP error answer fails the command (its body is still printed).
          "curl() { command curl --fail-with-body \"$@\"; }",
          substitute(command),
          "rc=$?",
          `for v in ${variables.join(" ")}; do [ -n "\${!v+x}" ] && declare -p "$v"; done > '${state}'`,
          "exit $rc",
        ].join("\n");
        const started = Date.now();
        const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn("bash", ["-c", script], { cwd: REPO_ROOT, env: shellEnv, stdio: ["ignore", "pipe", "pipe"] });
          let out = "";
          child.stdout.on("data", (d) => (out += d));
          child.stderr.on("data", (d) => (out += d));
          const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
          child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, out });
          });
        });
        const expected = EXPECTED_EXIT.find((e) => e.command.test(command))?.codes ?? [0];
        expect(expected, `${block.file}:${block.line}: \`${command}\` exited ${result.code}:\n${result.out.slice(-3_000)}`).toContain(result.code);
        ran.push(`${((Date.now() - started) / 1000).toFixed(1)} s  ${command.split("\n")[0]!.slice(0, 100)}`);
      }
    }
    console.log(`README and docs/: ${ran.length} commands in ${toRun.length} blocks\n${ran.join("\n")}`);
  }, 600_000);

  it("reaches the broadcast's recipients: COMPLETED with recipients > 0, its mail in /dev/mail", async () => {
    const bootstrap = JSON.parse(readFileSync(path.join(dataDir, "dev-bootstrap.json"), "utf8"));
    const headers = { authorization: `Bearer ${bootstrap.workspaces[0].apiKeys[0].key}` };
    const base = `http://127.0.0.1:${httpPort}`;
    // The id the README's broadcast example captured, from the shell state the examples ran with.
    const shellState = readFileSync(path.join(dataDir, "readme-shell-state.sh"), "utf8");
    const id = /^declare -\S* ID="?([^"\n]*)"?$/m.exec(shellState)?.[1];
    expect(String(id), shellState).toMatch(/^cmp_/);
    const stats = await waitFor("the broadcast to complete", async () => {
      const s = (await (await fetch(`${base}/v1/broadcasts/${id}/stats`, { headers })).json()).stats;
      return s?.status === "COMPLETED" ? s : undefined;
    }, 90_000);
    expect(stats.recipients).toBeGreaterThan(0);
    expect(stats.delivered).toBe(stats.recipients);
    // The inbox pages 50 at a time: each message is found by its search (subject or recipient).
    const inbox = async (q: string) => (await fetch(`${base}/dev/mail?q=${encodeURIComponent(q)}`)).text();
    expect(await inbox("Hi Zoe")).toContain("Hi Zoe"); // the contact the README adds
    expect(await inbox("Hi Ann")).toContain("Hi Ann"); // one of the sample contacts
    expect(await inbox("A-1042")).toContain("Order A-1042 is on its way"); // the README's template
  }, 120_000);

  it("delivers the README's webhook to the development receiver it targets", async () => {
    const received = await waitFor("the webhook's test event at /dev/webhooks", async () => {
      const html = await (await fetch(`http://127.0.0.1:${httpPort}/dev/webhooks`)).text();
      return html.includes("TESTING_CONNECTION") ? html : undefined;
    }, 60_000);
    expect(received).toContain("to /dev/webhooks/readme");
    expect(received).toMatch(/webhook-signature: v1,/);
  }, 90_000);

  it("stops every unit and nats-server when npm gets SIGTERM, as from a process manager", async () => {
    const running = pidsNow();
    for (const pid of running) pids.add(pid);
    expect(running.length).toBeGreaterThanOrEqual(8);
    const exited = new Promise<void>((resolve) => npm.once("exit", () => resolve()));
    process.kill(npm.pid!, "SIGTERM"); // npm only, not its group
    await Promise.race([exited, new Promise((_r, reject) => setTimeout(() => reject(new Error(`npm did not exit after SIGTERM:\n${tail()}`)), 45_000))]);
    await waitFor("every unit and nats-server to stop", () => (running.every((pid) => !isAlive(pid)) ? true : undefined), 15_000)
      .catch(() => expect(running.filter((pid) => isAlive(pid)), `still running after npm got SIGTERM:\n${tail()}`).toEqual([]));
    expect(pidsNow(), "pid files left behind").toEqual([]);
    expect(output).not.toContain("did not stop within 30 s");
  }, 90_000);
});
