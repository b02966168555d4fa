/**
 * MJML templates (DESIGN §10.2): compiled to HTML once, when saved. `mj-include` is off (no
 * file is ever read); the package is loaded on first use, so units that never see MJML never
 * load it.
 */
export interface MjmlError {
  line: number;
  message: string;
}

export type MjmlResult = { html: string } | { error: MjmlError };

type Mjml2Html = (input: string, options: Record<string, unknown>) => MjmlOutput | Promise<MjmlOutput>;
interface MjmlOutput {
  html: string;
  errors?: Array<{ line?: number; message?: string; formattedMessage?: string }>;
}

let loaded: Promise<Mjml2Html> | undefined;

async function mjml2html(): Promise<Mjml2Html> {
  // A specifier in a variable: loaded at run time only, typed here (MJML ships no types of its own).
  const specifier = "mjml";
  loaded ??= import(specifier).then((m: { default?: unknown }) => (m.default ?? m) as Mjml2Html);
  return loaded;
}

export async function compileMjml(source: string): Promise<MjmlResult> {
  if (!/<mjml[\s>]/i.test(source)) return { error: { line: 1, message: "an MJML template starts with <mjml>" } };
  let out: MjmlOutput;
  try {
    out = await (await mjml2html())(source, { validationLevel: "soft", ignoreIncludes: true, keepComments: true, minify: false });
  } catch (err) {
    const e = err as { message?: string; line?: number; details?: Array<{ line?: number; message?: string }> };
    const first = e.details?.[0];
    return { error: { line: first?.line ?? e.line ?? 1, message: first?.message ?? e.message ?? "MJML could not be compiled" } };
  }
  const first = out.errors?.[0];
  if (first) return { error: { line: first.line ?? 1, message: first.message ?? first.formattedMessage ?? "invalid MJML" } };
  return { html: out.html };
}
