import { describe, expect, it } from 'vitest';
import { nodeIdOf, parseNodeId } from '../../src/mesh/node-id.js';

describe('node ids', () => {
  it('reads <mesh>.<name> into the mesh and the Dataplane name', () => {
    expect(parseNodeId('default.backend-1')).toEqual({ ok: true, mesh: 'default', name: 'backend-1' });
  });

  it('is the inverse of nodeIdOf', () => {
    const id = nodeIdOf('payments', 'web-7');
    expect(id).toBe('payments.web-7');
    expect(parseNodeId(id)).toEqual({ ok: true, mesh: 'payments', name: 'web-7' });
  });

  it.each([
    ['has no dot', 'backend-1', /<mesh>\.<name>/],
    ['has an empty mesh', '.backend-1', /mesh ""/],
    ['has an empty name', 'default.', /name ""/],
    ['has uppercase letters', 'Default.backend-1', /mesh "Default".*DNS label/],
    ['has a dot inside the name, since the id splits on the first dot', 'default.backend.1', /name "backend\.1".*DNS label/],
  ])('refuses an id that %s, with a reason', (_what, id, reason) => {
    const result = parseNodeId(id);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(reason);
  });
});
