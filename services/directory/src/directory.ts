import type { Store } from "../../kit/src/store/port.js";
import { openRepos, type DirectoryRepos } from "./store.js";
import { Workspaces } from "./workspaces.js";
import { ApiKeys } from "./keys.js";
import { Senders } from "./senders.js";
import { Members } from "./members.js";
import { ContactProperties } from "./properties.js";
import { Contacts } from "./contacts.js";
import { Suppressions } from "./suppression.js";
import { Templates } from "./templates.js";
import { Usage } from "./usage.js";
import { Bootstrap } from "./bootstrap.js";
import { createResolver, generateDkimKeyPair, type DkimKeyPair, type DnsPolicy, type TxtResolver } from "./dns.js";
import { systemClock, type Clock } from "./validation.js";

export interface DirectoryOptions {
  resolver?: TxtResolver;
  dns?: Partial<DnsPolicy>;
  /** DKIM key pair source (tests reuse pre-generated pairs: RSA 2048 takes ~1 s each). */
  generateDkimKey?: () => Promise<DkimKeyPair>;
  now?: Clock;
}

/** Every domain module of the directory, wired over one store. */
export interface Directory {
  repos: DirectoryRepos;
  workspaces: Workspaces;
  keys: ApiKeys;
  senders: Senders;
  members: Members;
  properties: ContactProperties;
  contacts: Contacts;
  suppressions: Suppressions;
  templates: Templates;
  usage: Usage;
  bootstrap: Bootstrap;
}

export const DEFAULT_SPF_INCLUDE = "_spf.mailroom.local";

export async function createDirectory(store: Store, opts: DirectoryOptions = {}): Promise<Directory> {
  const repos = await openRepos(store);
  const now = opts.now ?? systemClock;
  const policy: DnsPolicy = { spfInclude: opts.dns?.spfInclude || process.env.MAILROOM_SPF_INCLUDE || DEFAULT_SPF_INCLUDE };
  const workspaces = new Workspaces(repos, now);
  const keys = new ApiKeys(repos, workspaces, now);
  const senders = new Senders(repos, workspaces, opts.resolver ?? createResolver(), policy, now, opts.generateDkimKey ?? generateDkimKeyPair);
  const members = new Members(repos, workspaces, now);
  const properties = new ContactProperties(repos, workspaces, now);
  const contacts = new Contacts(repos, workspaces, properties, now);
  const suppressions = new Suppressions(repos, now);
  const templates = new Templates(repos, workspaces, now);
  const usage = new Usage(repos, workspaces, now);
  const bootstrap = new Bootstrap({ repos, workspaces, keys, senders, members, properties, contacts, templates });
  return { repos, workspaces, keys, senders, members, properties, contacts, suppressions, templates, usage, bootstrap };
}
