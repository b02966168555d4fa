/** Reading Prometheus text exposition in tests. */

/** Sum of every sample of `name` whose labels include all of `labels` (0 when none). */
export function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Whether the text declares a metric of this name (a HELP or TYPE line). */
export function declares(text: string, name: string): boolean {
  return text.includes(`# TYPE ${name} `);
}

export async function scrape(url: string, token?: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
  return res.text();
}
