import { userInfo } from "node:os";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client, type Interceptor } from "@connectrpc/connect";
import { DirectoryService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { connectClient, errorInfoOf, loadConfig } from "@mailroom/kit";
import { ACTOR_HEADER, actorHeaderValue } from "@mailroom/kit/audit.js";

export type DirectoryClient = Client<typeof DirectoryService>;
export type TeamClient = Client<typeof TeamService>;

/** MAILROOM_DIRECTORY_URL as kit's config reads it (default: the local launcher's port). */
export function directoryUrl(env: NodeJS.ProcessEnv = process.env): string {
  return loadConfig(env).urls.directory;
}

/** The operating-system user running the CLI (the audit log's actor "cli:<user>"). */
export function cliUser(env: NodeJS.ProcessEnv = process.env): string {
  let name = "";
  try {
    name = userInfo().username;
  } catch {
    // No passwd entry (some containers): the login name the environment gives, if any.
  }
  return (name || env.USER || env.LOGNAME || "unknown").replace(/\s+/g, "_").slice(0, 100);
}

/** Every RPC the CLI makes names its user, so the changes it makes are audited as cli:<user>. */
export const cliActor = (user = cliUser()): Interceptor => (next) => (req) => {
  req.header.set(ACTOR_HEADER, actorHeaderValue("cli", user));
  return next(req);
};

/** A client of one of the directory's services, as the CLI's user (use it for every client the CLI makes). */
export function cliClient<T extends DescService>(service: T, url = directoryUrl()): Client<T> {
  return connectClient(service, url, [cliActor()]);
}

export function directoryClient(url = directoryUrl()): DirectoryClient {
  return cliClient(DirectoryService, url);
}

export function teamClient(url = directoryUrl()): TeamClient {
  return cliClient(TeamService, url);
}

/** A one-line, human explanation of a failed call. */
export function describeError(err: unknown, url = directoryUrl()): string {
  const info = errorInfoOf(err);
  if (info) return `${info.message} (${info.code})`;
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable || err.code === Code.Unknown && /ECONNREFUSED|fetch failed/i.test(err.rawMessage)) {
      return `cannot reach the directory service at ${url} (is it running? set MAILROOM_DIRECTORY_URL)`;
    }
    return `${err.rawMessage} (${Code[err.code]})`;
  }
  return err instanceof Error ? err.message : String(err);
}
