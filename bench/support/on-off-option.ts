import { parseOnOff } from '../../src/cli/option-parsers.js';

/** A bench's `on|off` option, read as `chancery run` reads its own; a refusal names the flag. */
export function onOffOption(name: string, text: string): boolean {
  try {
    return parseOnOff(text);
  } catch (error) {
    throw new Error(`--${name}: ${(error as Error).message}`, { cause: error });
  }
}
