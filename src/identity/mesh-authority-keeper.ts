import { mtlsModeOf, type GenerationInput } from '../mesh/index.js';
import type { CredentialStore } from './credential-store.js';
import { ensureMeshAuthority } from './mesh-authorities.js';

/**
 * Gives each mesh that turns mTLS on its first CA, following the change feed: every instance
 * runs one, and `ensureMeshAuthority` lets only one of them write it. A failure (the store
 * down) is reported and tried again at the next revision.
 */
export class MeshAuthorityKeeper {
  readonly #store: CredentialStore;
  readonly #now: () => number;
  readonly #onError: (error: unknown, mesh: string) => void;
  /** Meshes a CA is being written for now. */
  readonly #writing = new Set<string>();

  constructor(options: { readonly store: CredentialStore; readonly now: () => number; readonly onError: (error: unknown, mesh: string) => void }) {
    this.#store = options.store;
    this.#now = options.now;
    this.#onError = options.onError;
  }

  follow(projection: GenerationInput): void {
    for (const [mesh, state] of projection.meshes) {
      if (state.authorities.size > 0 || mtlsModeOf(state.mesh.resource) === 'disabled' || this.#writing.has(mesh)) continue;
      this.#writing.add(mesh);
      ensureMeshAuthority(this.#store, state, this.#now())
        .catch((error: unknown) => this.#onError(error, mesh))
        .finally(() => this.#writing.delete(mesh));
    }
  }
}
