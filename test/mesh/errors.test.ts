import { describe, expect, it } from 'vitest';
import { ChanceryError } from '../../src/common/index.js';
import { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from '../../src/mesh/errors.js';

describe('mesh errors', () => {
  const errors = [
    new InvalidNodeIdError('x', 1, 'reason'),
    new MeshNotFoundError('m.x', 1, 'm'),
    new DataplaneNotFoundError('m.x', 1, 'm', 'x'),
  ];

  it('are ChanceryErrors named after their class, each with its own CHANCERY_MESH_ code', () => {
    for (const error of errors) {
      expect(error).toBeInstanceOf(ChanceryError);
      expect(error.name).toBe(error.constructor.name);
      expect(error.code).toMatch(/^CHANCERY_MESH_[A-Z_]+$/);
    }
    expect(new Set(errors.map((error) => error.code)).size).toBe(errors.length);
  });

  it('carry the node and revision they are about', () => {
    for (const error of errors) expect(error).toMatchObject({ revision: 1, node: expect.any(String) });
  });
});
