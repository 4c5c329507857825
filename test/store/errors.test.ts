import { describe, expect, it } from 'vitest';
import {
  MeshNotFoundError,
  NotFoundError,
  StoreSchemaTooNewError,
  StoreUnavailableError,
  UnsupportedStoreError,
  VersionConflictError,
} from '../../src/store/errors.js';
import { asResourceVersion } from '../../src/store/types.js';
import { dataplaneKey, meshKey } from './fixtures.js';

describe('store errors', () => {
  it('give every error its own CHANCERY_STORE_ code and the class name as name', () => {
    const errors = [
      new VersionConflictError(meshKey('m'), asResourceVersion(1), asResourceVersion(2)),
      new NotFoundError(meshKey('m')),
      new MeshNotFoundError('m', dataplaneKey('m', 'a')),
      new StoreUnavailableError('reading events after seq 0'),
      new UnsupportedStoreError('mysql://db', ['memory']),
      new StoreSchemaTooNewError(3, 1),
    ];
    const codes = errors.map((error) => error.code);
    expect(new Set(codes).size).toBe(errors.length);
    for (const error of errors) {
      expect(error.code).toMatch(/^CHANCERY_STORE_[A-Z_]+$/);
      expect(error.name).toBe(error.constructor.name);
    }
  });

  it('name the key and both versions in a version conflict', () => {
    expect(new VersionConflictError(dataplaneKey('default', 'backend-1'), asResourceVersion(3), asResourceVersion(4)).message).toBe(
      'Dataplane default/backend-1: expected version 3, but it is at version 4',
    );
    expect(new VersionConflictError(meshKey('default'), 'absent', asResourceVersion(1)).message).toBe(
      'Mesh default: expected it to be absent, but it is at version 1',
    );
    expect(new VersionConflictError(meshKey('default'), asResourceVersion(2), 'absent').message).toBe(
      'Mesh default: expected version 2, but it does not exist',
    );
  });

  it('name the key, and the mesh, of a missing resource', () => {
    expect(new NotFoundError(dataplaneKey('default', 'backend-1')).message).toBe('Dataplane default/backend-1 does not exist');
    expect(new MeshNotFoundError('payments', dataplaneKey('payments', 'a')).message).toBe(
      'cannot write Dataplane payments/a: Mesh payments does not exist',
    );
  });

  it('keep the cause of an outage and say what the store was doing', () => {
    const cause = new Error('connection refused');
    const error = new StoreUnavailableError('reading events after seq 12', { cause });
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('store unavailable while reading events after seq 12: connection refused');
  });

  it('tell which schema version the database has and which this Chancery knows', () => {
    expect(new StoreSchemaTooNewError(3, 1).message).toBe(
      "the store's schema is at version 3, but this Chancery knows versions up to 1: upgrade Chancery",
    );
  });
});
