import { Output, toValue, toValueSync, TypeGuards, type Context, type Emitter, type Template } from "liquidjs";

/**
 * Speeds up a parsed template without changing what it renders: each run of literal HTML and
 * outputs becomes one template whose render is a plain function. liquidjs renders every node
 * through a generator (about a microsecond each, checks included), and a newsletter is mostly
 * such nodes: 97 KB with a loop and a condition has some 160 per recipient.
 *
 * An output is evaluated directly when it reads a variable by a literal path (`a`, `a.b`,
 * `a["b"]`, `a[0]`) through filters whose arguments are literals — what merge content is
 * made of; any other output (an expression, an argument naming a variable) renders as
 * liquidjs renders it, inside the run. Tags stay where they are; their bodies are fused too.
 */
export function fuse(templates: Template[]): Template[] {
  for (const t of templates) fuseChildren(t);
  const out: Template[] = [];
  let run: Part[] = [];
  let first: Template | undefined;
  const flush = () => {
    // Even one node: a plain call instead of liquidjs's generator (a loop body is often one literal).
    if (run.length) out.push(new FusedRun(run, first!));
    run = [];
    first = undefined;
  };
  for (const t of templates) {
    const part = partOf(t);
    if (part === undefined) {
      flush();
      out.push(t);
      continue;
    }
    if (!first) first = t;
    if (typeof part === "string" && typeof run[run.length - 1] === "string") run[run.length - 1] += part;
    else run.push(part);
  }
  flush();
  return out;
}

/** A literal, or a function writing one output. */
type Part = string | ((ctx: Context, emitter: Emitter) => void);

function partOf(t: Template): Part | undefined {
  const str = (t as unknown as { str?: unknown }).str;
  if (typeof str === "string" && TypeGuards.isHTMLToken(t.token)) return str;
  if (t instanceof Output) return fastOutput(t) ?? ((ctx, emitter) => void toValueSync(t.render(ctx, emitter)));
  return undefined;
}

/** What a liquidjs Filter holds (its fields are private in the typings). */
interface FilterParts {
  handler: (this: unknown, ...args: unknown[]) => unknown;
  token: unknown;
  liquid: unknown;
}

interface LiteralToken {
  content: unknown;
}
const isLiteral = (token: unknown): token is LiteralToken => typeof token === "object" && token !== null && "content" in token;

function fastOutput(output: Output): Part | undefined {
  const value = output.value as unknown as { initial: { postfix: unknown[] }; filters: unknown[] };
  const postfix = value.initial?.postfix;
  if (!postfix || postfix.length !== 1) return undefined;
  const access = postfix[0] as { props?: unknown[]; variable?: unknown };
  if (!Array.isArray(access.props) || access.variable || !access.props.length || !access.props.every(isLiteral)) return undefined;
  const path = access.props.map((p) => (p as LiteralToken).content as string | number);
  if (typeof path[0] !== "string") return undefined;
  const filters: { filter: FilterParts; args: unknown[] }[] = [];
  for (const filter of value.filters as unknown as FilterParts[]) {
    const f = filter as unknown as { args: unknown[] };
    const args: unknown[] = [];
    for (const arg of f.args) {
      if (Array.isArray(arg)) {
        if (!isLiteral(arg[1])) return undefined;
        args.push([arg[0], arg[1].content]);
      } else if (isLiteral(arg)) args.push(arg.content);
      else return undefined;
    }
    filters.push({ filter, args });
  }
  const head = path[0];
  return (ctx, emitter) => {
    let v: unknown = (ctx as unknown as { findScope(key: string): object }).findScope(head);
    for (const key of path) v = ctx.readProperty(v as object, key as string);
    for (const { filter, args } of filters) {
      v = toValueSync(filter.handler.apply({ context: ctx, token: filter.token, liquid: filter.liquid } as never, [v, ...args]));
    }
    emitter.write(toValue(v));
  };
}

/** Whether a template renders in a plain call (a fused run), with no generator and no break or continue. */
export function isFusedRun(t: Template): boolean {
  return t instanceof FusedRun;
}

/** Literal HTML and outputs, rendered in one call. Its token is the first node's (where an error points). */
class FusedRun implements Template {
  readonly token: Template["token"];
  constructor(
    private readonly parts: Part[],
    first: Template,
  ) {
    this.token = first.token;
  }
  render(ctx: Context, emitter: Emitter): void {
    for (const part of this.parts) {
      if (typeof part === "string") emitter.write(part);
      else part(ctx, emitter);
    }
  }
}

/** The bodies of tags that hold templates: for/tablerow (and their counted bodies), if/unless/case branches, capture. */
function fuseChildren(t: Template): void {
  const node = t as unknown as { templates?: unknown; elseTemplates?: unknown; branches?: unknown };
  if (Array.isArray(node.templates)) node.templates = fuse(node.templates as Template[]);
  if (Array.isArray(node.elseTemplates)) node.elseTemplates = fuse(node.elseTemplates as Template[]);
  if (Array.isArray(node.branches)) {
    for (const branch of node.branches as { templates?: unknown }[]) {
      if (Array.isArray(branch.templates)) branch.templates = fuse(branch.templates as Template[]);
    }
  }
}
