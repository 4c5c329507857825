/** A bench's integer option, from `min` to `max`; anything else stops the bench naming the flag. */
export function integerOption(name: string, value: string, min: number, max: number): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) throw new Error(`--${name} must be an integer from ${min} to ${max}, not "${value}"`);
  return number;
}
