import type { FieldSource, Merged, PolicyRef, PolicyType } from '../policies/index.js';

/**
 * One field of a node's effective configuration, as inspection shows it and as the generator
 * rendered it (I9): the value, the policy that set it (none for a client default), the policies
 * that set it too but lost on precedence, and what it became in this client's configuration, or
 * why it was not applied to this client.
 */
export interface FieldExplanation {
  readonly policy: PolicyType;
  /** As written in the policy's `default`: `http.requestTimeout`. */
  readonly field: string;
  readonly value: unknown;
  /** Absent for a default. */
  readonly from?: PolicyRef;
  readonly lost: readonly PolicyRef[];
  /** The client field it set (`RouteAction.timeout`); absent when not applied. */
  readonly as?: string;
  /** Why this client does not get it; absent when applied. */
  readonly notApplied?: string;
}

/**
 * The rows of one policy type's fields for one rendering: each field either set by a policy
 * (applied, or not applied with the reason) or left at the client's default. Rows are added in
 * the order the renderer reads the fields, so an explanation reads as the configuration does.
 */
export class FieldRows {
  readonly rows: FieldExplanation[] = [];
  readonly #sources: ReadonlyMap<string, FieldSource>;

  constructor(
    readonly policy: PolicyType,
    merged: Merged<object>,
  ) {
    this.#sources = new Map(merged.fields.map((field) => [field.path, field]));
  }

  /** The value a policy set at `path`, if any. */
  get<T>(path: string): T | undefined {
    return this.#sources.get(path)?.value as T | undefined;
  }

  /**
   * Records the field at `path` as applied `as` a client field; left unset, as its default
   * `fallback` (no row when there is no default worth showing).
   */
  applied(path: string, as: string, fallback?: unknown): void {
    const source = this.#sources.get(path);
    if (source !== undefined) this.rows.push({ policy: this.policy, field: path, value: source.value, from: source.from, lost: source.lost, as });
    else if (fallback !== undefined) this.rows.push({ policy: this.policy, field: path, value: fallback, lost: [], as });
  }

  /** Records every field set at `path`, or under it, as not applied to this client, and why. */
  notApplied(path: string, reason: string): void {
    for (const [field, source] of this.#sources) {
      if (path !== '' && field !== path && !field.startsWith(`${path}.`)) continue;
      this.rows.push({ policy: this.policy, field, value: source.value, from: source.from, lost: source.lost, notApplied: reason });
    }
  }
}
