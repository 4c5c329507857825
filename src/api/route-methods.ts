/**
 * The methods each route of the API answers, to tell a wrong method (405, with `Allow`) from a
 * path no route has (404): the router itself answers both alike. Patterns are fastify's
 * (`/meshes/:mesh`); a `:param` segment matches any one non-empty segment.
 */
export class RouteMethods {
  readonly #routes: Array<{ readonly segments: readonly string[]; readonly methods: Set<string> }> = [];

  add(method: string | readonly string[], url: string): void {
    const segments = url.split('/');
    let route = this.#routes.find((known) => known.segments.join('/') === url);
    if (route === undefined) {
      route = { segments, methods: new Set() };
      this.#routes.push(route);
    }
    for (const one of typeof method === 'string' ? [method] : method) route.methods.add(one);
  }

  /** The methods of the routes matching `path` (no query string), sorted; none when no route does. */
  allowed(path: string): readonly string[] {
    const segments = path.split('/');
    const methods = new Set<string>();
    for (const route of this.#routes) {
      if (matches(route.segments, segments)) for (const method of route.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}

function matches(pattern: readonly string[], segments: readonly string[]): boolean {
  if (pattern.length !== segments.length) return false;
  return pattern.every((part, i) => (part.startsWith(':') ? segments[i] !== '' : part === segments[i]));
}
