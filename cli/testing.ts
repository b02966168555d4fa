/**
 * Runs the CLI commands the gateway's hints name (error bodies, error pages, console pages)
 * through the real command-line parser, against recording clients: a hint must name a command
 * that works as written, arguments in the order the CLI takes them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runCli } from "./program.js";
import type { CliClients } from "./client.js";

export const HINT_WORKSPACE = "ws_hint";

/** The file a hint's `<file>` names: one per test process, removed when it exits. */
let hintFile: string | undefined;
function fileForHints(): string {
  if (hintFile) return hintFile;
  const dir = mkdtempSync(path.join(os.tmpdir(), "mailroom-hint-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  hintFile = path.join(dir, "welcome.html");
  writeFileSync(hintFile, "<p>Hi</p>");
  return hintFile;
}

/** What each placeholder a hint names (`<…>`) stands for when the hint is run. */
function hintValues(): Record<string, string> {
  const html = fileForHints();
  return {
    "<workspace-id>": HINT_WORKSPACE,
    "<id>": HINT_WORKSPACE,
    "<email>": "ann@hint.test",
    "<member>": "owner@hint.test",
    "<ROLE>": "EDITOR",
    "<domain>": "hint.test",
    "<address>": "news@hint.test",
    "<slug>": "plan",
    "<type>": "string",
    "<name>": "welcome",
    "<subject>": "Hi",
    "<file>": html,
    "<emails per month>": "1000",
  };
}

/** The `npx mailroom …` commands a text names between backticks (without `npx mailroom`). */
export function hintedCommands(text: string): string[] {
  return [...text.matchAll(/`npx mailroom ([^`]+)`/g)].map((m) => m[1]!);
}

export interface HintRun {
  /** The calls the command made (to any of the accounts and audience units' services), in order. */
  calls: Array<{ method: string; request: Record<string, unknown> }>;
  err: string[];
}

/**
 * Runs one hinted command (its placeholders filled in) against clients that record each call
 * and answer it emptily: what the command prints afterwards does not matter, only that it got
 * as far as asking the accounts or audience unit. A usage error (a missing argument, an unknown option) stops it
 * before any call.
 */
export async function runHint(command: string): Promise<HintRun> {
  let filled = command;
  for (const [placeholder, value] of Object.entries(hintValues())) filled = filled.replaceAll(placeholder, value);
  const left = /<[^>]+>/.exec(filled);
  if (left) throw new Error(`the hint "${command}" names ${left[0]}, which runHint has no value for`);
  const calls: HintRun["calls"] = [];
  const err: string[] = [];
  const recording = new Proxy({}, {
    get: (_target, method) => async (request: Record<string, unknown>) => {
      calls.push({ method: String(method), request });
      return {};
    },
  });
  await runCli(filled.split(/\s+/).filter(Boolean), {
    env: { MAILROOM_WORKSPACE: "" },
    clients: { accounts: recording, templates: recording, team: recording, contacts: recording, groups: recording } as CliClients,
    output: (json) => ({ out: () => undefined, err: (line) => void err.push(line), json }),
    interactive: false,
  });
  return { calls, err };
}

/** The workspace a call acted on (its `workspaceId`, or `id` for workspace commands). */
export const workspaceOfCall = (call: HintRun["calls"][number]) => call.request.workspaceId ?? call.request.id;
