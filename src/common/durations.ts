const AGE = /^(\d+(?:\.\d+)?)(s|m|h|d)$/;
const AGE_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A span with its unit (`45s`, `90m`, `12h`, `30d`) in ms; undefined when the text is not one. */
export function parseAge(text: string): number | undefined {
  const age = AGE.exec(text.trim());
  if (age?.[1] === undefined) return undefined;
  return Math.round(Number(age[1]) * AGE_UNIT_MS[age[2] as keyof typeof AGE_UNIT_MS]);
}
