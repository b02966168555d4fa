import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { Command } from "commander";
import { describeError, type CliClients, type CliUrls } from "./client.js";
import type { Output } from "./output.js";

/** A user mistake on the command line (not an RPC failure). */
export class UsageError extends Error {}

/** The clients of the accounts unit (accounts, templates, team) and of the audience unit (contacts, groups), by service. */
export interface CliContext extends CliClients {
  output: Output;
  env: NodeJS.ProcessEnv;
  /** The accounts and audience units' URLs, for error messages. */
  urls: CliUrls;
  /** Show progress bars (a TTY on stderr). */
  interactive: boolean;
  exitCode: number;
}

/** The workspace every per-workspace command acts on: -w/--workspace or MAILROOM_WORKSPACE. */
export function workspaceOf(ctx: CliContext, cmd: Command): string {
  const ws = (cmd.optsWithGlobals() as { workspace?: string }).workspace || ctx.env.MAILROOM_WORKSPACE;
  if (!ws) throw new UsageError("no workspace given: pass -w <workspace-id> or set MAILROOM_WORKSPACE");
  return ws;
}

/** Wraps an action: errors become one clear line on stderr and exit code 1. */
export function action<A extends unknown[]>(ctx: CliContext, fn: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      ctx.output.err(`error: ${err instanceof UsageError ? err.message : describeError(err, ctx.urls)}`);
      ctx.exitCode = 1;
    }
  };
}

/** Prints a response as protobuf JSON (--json). */
export function printJson<D extends DescMessage>(ctx: CliContext, schema: D, message: MessageShape<D>): void {
  ctx.output.out(JSON.stringify(toJson(schema, message, { alwaysEmitImplicit: true }), null, 2));
}

export function parseBool(value: string, flag: string): boolean {
  const v = value.trim().toLowerCase();
  if (["true", "yes", "1", "on"].includes(v)) return true;
  if (["false", "no", "0", "off"].includes(v)) return false;
  throw new UsageError(`${flag} expects true or false, got "${value}"`);
}

export function parseLimit(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} expects a non-negative integer, got "${value}"`);
  return n;
}
