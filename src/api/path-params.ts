import type { FastifyInstance } from 'fastify';
import { excerpt } from '../common/index.js';
import { isKeyId, KEY_ID_RULE } from '../identity/index.js';
import { DNS_LABEL_RULE, isDnsLabel, parseNodeId } from '../mesh/index.js';
import { InvalidPathNameError } from './errors.js';

/** Why a path parameter's value cannot name anything; undefined when it may. */
type Rule = (value: string, parameter: string) => string | undefined;

const dnsLabel: Rule = (value, parameter) => (isDnsLabel(value) ? undefined : `${parameter} ${excerpt(value)} in the URL path ${DNS_LABEL_RULE}`);
const nodeId: Rule = (value) => {
  const parsed = parseNodeId(value);
  return parsed.ok ? undefined : parsed.reason;
};
const keyId: Rule = (value, parameter) => (isKeyId(value) ? undefined : `${parameter} ${excerpt(value)} in the URL path ${KEY_ID_RULE}`);
// Revision 0 is the empty store, which no write made and nothing goes back to.
const revision: Rule = (value, parameter) => (/^[1-9]\d{0,14}$/.test(value) ? undefined : `${parameter} ${excerpt(value)} in the URL path must be a store revision: a whole number from 1`);

/**
 * Every path parameter a route may have, and what its value must be. A route with a parameter
 * not listed here fails to register, so no route can take a name unchecked.
 */
const PATH_PARAMETERS: Readonly<Record<string, Rule>> = {
  mesh: dnsLabel,
  // A Dataplane's or an API token's name.
  name: dnsLabel,
  node: nodeId,
  kid: keyId,
  revision,
  // A mesh CA's id (ca-1, ca-2, …).
  id: dnsLabel,
  // The UI's files: one that is not served is a 404 (ui-routes.ts).
  file: () => undefined,
};

/**
 * Refuses, on every route, a path parameter no resource can have with 400
 * `CHANCERY_API_INVALID_NAME` naming it, before anything reads the store: `GET /meshes/BAD_NAME`
 * is a mistake to point out, not a resource to look for. Registered after the API's gate.
 */
export function registerPathCheck(app: FastifyInstance): void {
  app.addHook('onRoute', ({ url }) => {
    for (const segment of url.split('/')) {
      if (segment.startsWith(':') && !Object.hasOwn(PATH_PARAMETERS, segment.slice(1))) {
        throw new Error(`route ${url}: path parameter ${segment} has no rule in PATH_PARAMETERS`);
      }
    }
  });
  app.addHook('onRequest', async (request) => {
    const params = request.params as Readonly<Record<string, string>>;
    for (const parameter in params) {
      const reason = PATH_PARAMETERS[parameter]?.(params[parameter]!, parameter);
      if (reason !== undefined) throw new InvalidPathNameError(parameter, reason);
    }
  });
}
