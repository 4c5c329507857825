import type { ResourceStore } from '../store/index.js';

/** What identity reads and writes of the store: keys and API tokens are resources like any other. */
export type CredentialStore = Pick<ResourceStore, 'get' | 'list' | 'put' | 'delete'>;
