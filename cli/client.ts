import { userInfo } from "node:os";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client, type Interceptor } from "@connectrpc/connect";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { connectClient, errorInfoOf, loadConfig } from "@mailroom/kit";
import { ACTOR_HEADER, actorHeaderValue } from "@mailroom/kit/audit.js";

export type AccountsClient = Client<typeof AccountsService>;
export type ContactClient = Client<typeof ContactService>;
export type TemplateClient = Client<typeof TemplateService>;
export type TeamClient = Client<typeof TeamService>;
export type GroupClient = Client<typeof GroupService>;

/** The two units the CLI talks to, and where: MAILROOM_ACCOUNTS_URL and MAILROOM_AUDIENCE_URL as kit's config reads them. */
export type CliUnit = "accounts" | "audience";
export type CliUrls = Record<CliUnit, string>;

/** The URLs of the accounts and audience units (default: the local launcher's ports). */
export function cliUrls(env: NodeJS.ProcessEnv = process.env): CliUrls {
  const { urls } = loadConfig(env);
  return { accounts: urls.accounts, audience: urls.audience };
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

/** The base URL each failed call was made to, so describeError names the unit it could not reach. */
const failedAt = new WeakMap<object, string>();
const rememberUrl = (url: string): Interceptor => (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    if (err !== null && typeof err === "object") failedAt.set(err, url);
    throw err;
  }
};

/** A client of one of the accounts or audience unit's services, as the CLI's user (use it for every client the CLI makes). */
export function cliClient<T extends DescService>(service: T, url: string): Client<T> {
  return connectClient(service, url, [cliActor(), rememberUrl(url)]);
}

/** The clients the CLI's commands call, one per service, each at its unit's URL. */
export interface CliClients {
  /** Workspaces, API keys, senders and domains, members, usage, bootstrap (the accounts unit). */
  accounts: AccountsClient;
  /** Templates (the accounts unit). */
  templates: TemplateClient;
  /** Members with roles, sessions, the audit log (the accounts unit). */
  team: TeamClient;
  /** Contact properties, contacts, suppressions (the audience unit). */
  contacts: ContactClient;
  /** Groups (the audience unit). */
  groups: GroupClient;
}

export function cliClients(urls: CliUrls = cliUrls()): CliClients {
  return {
    accounts: cliClient(AccountsService, urls.accounts),
    templates: cliClient(TemplateService, urls.accounts),
    team: cliClient(TeamService, urls.accounts),
    contacts: cliClient(ContactService, urls.audience),
    groups: cliClient(GroupService, urls.audience),
  };
}

const URL_VARIABLE: Record<CliUnit, string> = { accounts: "MAILROOM_ACCOUNTS_URL", audience: "MAILROOM_AUDIENCE_URL" };

/** Why a call could not reach its unit, naming the unit, its URL and the variable that sets it. */
function unreachable(err: ConnectError, urls: CliUrls): string {
  const url = failedAt.get(err);
  const unit = (Object.keys(urls) as CliUnit[]).find((u) => urls[u] === url);
  if (unit) return `cannot reach the ${unit} service at ${url} (is it running? set ${URL_VARIABLE[unit]})`;
  return `cannot reach the accounts service at ${urls.accounts} or the audience service at ${urls.audience} (are they running? set ${URL_VARIABLE.accounts} and ${URL_VARIABLE.audience})`;
}

/** A one-line, human explanation of a failed call. */
export function describeError(err: unknown, urls: CliUrls = cliUrls()): string {
  const info = errorInfoOf(err);
  if (info) return `${info.message} (${info.code})`;
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable || err.code === Code.Unknown && /ECONNREFUSED|fetch failed/i.test(err.rawMessage)) {
      return unreachable(err, urls);
    }
    return `${err.rawMessage} (${Code[err.code]})`;
  }
  return err instanceof Error ? err.message : String(err);
}
