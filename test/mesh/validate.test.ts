import { describe, expect, it } from 'vitest';
import { RESOURCE_LIMITS } from '../../src/mesh/limits.js';
import { validate, type ValidationIssue } from '../../src/mesh/validate.js';

const dataplane = (networking: object, top: object = {}) => ({
  type: 'Dataplane',
  mesh: 'default',
  name: 'backend-1',
  networking,
  ...top,
});
const inbound = (entry: object) => dataplane({ address: '10.0.0.1', inbound: [entry] });
const outbound = (entry: object) => dataplane({ address: '10.0.0.1', outbound: [entry] });
const service = { service: 'backend' };

function issuesOf(input: unknown): readonly ValidationIssue[] {
  const result = validate(input);
  if (result.ok) throw new Error('expected validation to fail');
  return result.issues;
}

describe('validate', () => {
  describe('accepting and normalising', () => {
    it('accepts a Mesh with a DNS-label name, requiring dataplane tokens unless it says otherwise', () => {
      expect(validate({ type: 'Mesh', name: 'default' })).toEqual({ ok: true, resource: { type: 'Mesh', name: 'default', dataplaneAuth: 'token' } });
      expect(validate({ type: 'Mesh', name: 'open', dataplaneAuth: 'none' })).toEqual({ ok: true, resource: { type: 'Mesh', name: 'open', dataplaneAuth: 'none' } });
    });

    it('refuses a dataplaneAuth other than none or token, naming the field', () => {
      expect(validate({ type: 'Mesh', name: 'm', dataplaneAuth: 'mtls' })).toEqual({
        ok: false,
        issues: [{ path: 'dataplaneAuth', reason: 'must be one of "none", "token"' }],
      });
    });

    it('fills in servicePort from port, defaults missing inbound and outbound to empty lists, and sorts tags', () => {
      const result = validate(
        dataplane({ address: '10.0.0.1', inbound: [{ port: 10001, tags: { version: 'v1', service: 'backend', az: 'a' } }] }),
      );
      expect(result.ok && result.resource).toEqual({
        type: 'Dataplane',
        mesh: 'default',
        name: 'backend-1',
        networking: {
          address: '10.0.0.1',
          inbound: [{ port: 10001, servicePort: 10001, tags: { az: 'a', service: 'backend', version: 'v1' } }],
          outbound: [],
        },
      });
      const tags = result.ok && result.resource.type === 'Dataplane' ? result.resource.networking.inbound[0]?.tags : {};
      expect(Object.keys(tags ?? {})).toEqual(['az', 'service', 'version']);
    });

    it('keeps an explicit servicePort and accepts IPv6 addresses', () => {
      const result = validate(
        dataplane({ address: 'fd00::1', inbound: [{ port: 10001, servicePort: 9001, tags: service }], outbound: [{ port: 20001, service: 'web' }] }),
      );
      expect(result.ok && result.resource.type === 'Dataplane' && result.resource.networking).toEqual({
        address: 'fd00::1',
        inbound: [{ port: 10001, servicePort: 9001, tags: service }],
        outbound: [{ port: 20001, service: 'web' }],
      });
    });

    it('returns a deeply frozen resource, so nothing downstream can change what was validated', () => {
      const result = validate(
        dataplane({ address: '10.0.0.1', inbound: [{ port: 1, tags: service }], outbound: [{ port: 2, service: 'web' }] }),
      );
      if (!result.ok || result.resource.type !== 'Dataplane') throw new Error('expected a valid Dataplane');
      const { networking } = result.resource;
      for (const part of [result.resource, networking, networking.inbound, networking.inbound[0], networking.inbound[0]?.tags, networking.outbound, networking.outbound[0]]) {
        expect(Object.isFrozen(part)).toBe(true);
      }
    });

    it('does not keep a reference to the caller’s objects', () => {
      const tags = { service: 'backend' };
      const result = validate(inbound({ port: 10001, tags }));
      tags.service = 'changed';
      expect(result.ok && result.resource.type === 'Dataplane' && result.resource.networking.inbound[0]?.tags.service).toBe('backend');
    });
  });

  describe('reporting issues', () => {
    const cases: readonly { what: string; input: unknown; path: string; reason: RegExp }[] = [
      { what: 'the input is not an object', input: [], path: '', reason: /must be an object/ },
      { what: 'type is missing', input: { name: 'x' }, path: 'type', reason: /is required/ },
      { what: 'type is unknown', input: { type: 'Gateway', name: 'x' }, path: 'type', reason: /"Mesh", "Dataplane"/ },
      { what: 'a Mesh name has uppercase letters', input: { type: 'Mesh', name: 'Default' }, path: 'name', reason: /DNS label/ },
      { what: 'a Mesh has a field it does not know', input: { type: 'Mesh', name: 'm', mesh: 'm' }, path: 'mesh', reason: /unknown field/ },
      { what: 'a name is longer than 63 characters', input: { type: 'Mesh', name: 'a'.repeat(64) }, path: 'name', reason: /DNS label/ },
      { what: 'a name starts with a dash', input: { type: 'Mesh', name: '-a' }, path: 'name', reason: /DNS label/ },
      { what: 'a name contains a dot', input: { type: 'Mesh', name: 'a.b' }, path: 'name', reason: /DNS label/ },
      { what: 'a name is not a string', input: { type: 'Mesh', name: 7 }, path: 'name', reason: /must be a string/ },
      { what: 'a Dataplane has no mesh', input: { ...dataplane({ address: '10.0.0.1' }), mesh: undefined }, path: 'mesh', reason: /is required/ },
      { what: 'a Dataplane has no networking', input: { type: 'Dataplane', mesh: 'default', name: 'a' }, path: 'networking', reason: /is required/ },
      { what: 'a top-level field is misspelt', input: dataplane({ address: '10.0.0.1' }, { nmae: 'x' }), path: 'nmae', reason: /unknown field; a Dataplane has type, mesh, name, networking/ },
      { what: 'a networking field is misspelt', input: dataplane({ address: '10.0.0.1', inbounds: [] }), path: 'networking.inbounds', reason: /unknown field/ },
      { what: 'the address is missing', input: dataplane({}), path: 'networking.address', reason: /is required/ },
      { what: 'the address is a hostname', input: dataplane({ address: 'localhost' }), path: 'networking.address', reason: /IPv4 or IPv6/ },
      { what: 'the address is not a real IPv4 address', input: dataplane({ address: '300.1.1.1' }), path: 'networking.address', reason: /IPv4 or IPv6/ },
      { what: 'inbound is not a list', input: dataplane({ address: '10.0.0.1', inbound: {} }), path: 'networking.inbound', reason: /must be an array/ },
      { what: 'an inbound is not an object', input: dataplane({ address: '10.0.0.1', inbound: [5] }), path: 'networking.inbound[0]', reason: /must be an object/ },
      { what: 'an inbound port is 0', input: inbound({ port: 0, tags: service }), path: 'networking.inbound[0].port', reason: /1 to 65535/ },
      { what: 'an inbound port is above 65535', input: inbound({ port: 65536, tags: service }), path: 'networking.inbound[0].port', reason: /1 to 65535/ },
      { what: 'an inbound port is not an integer', input: inbound({ port: 80.5, tags: service }), path: 'networking.inbound[0].port', reason: /integer/ },
      { what: 'an inbound port is a string', input: inbound({ port: '80', tags: service }), path: 'networking.inbound[0].port', reason: /integer/ },
      { what: 'an inbound port is missing', input: inbound({ tags: service }), path: 'networking.inbound[0].port', reason: /is required/ },
      { what: 'a servicePort is out of range', input: inbound({ port: 80, servicePort: -1, tags: service }), path: 'networking.inbound[0].servicePort', reason: /1 to 65535/ },
      { what: 'an inbound has no tags', input: inbound({ port: 80 }), path: 'networking.inbound[0].tags', reason: /is required/ },
      { what: 'tags have no service', input: inbound({ port: 80, tags: { version: 'v1' } }), path: 'networking.inbound[0].tags.service', reason: /is required/ },
      { what: 'tags.service is not a DNS label', input: inbound({ port: 80, tags: { service: 'Backend_API' } }), path: 'networking.inbound[0].tags.service', reason: /DNS label/ },
      { what: 'a tag value is not a string', input: inbound({ port: 80, tags: { service: 'b', version: 2 } }), path: 'networking.inbound[0].tags.version', reason: /must be a string/ },
      { what: 'a tag key is not an identifier', input: inbound({ port: 80, tags: { service: 'b', 'kuma.io/zone': 1 } }), path: 'networking.inbound[0].tags["kuma.io/zone"]', reason: /must be a string/ },
      { what: 'an inbound field is misspelt', input: inbound({ port: 80, sevicePort: 81, tags: service }), path: 'networking.inbound[0].sevicePort', reason: /unknown field/ },
      { what: 'an outbound port is out of range', input: outbound({ port: 70000, service: 'web' }), path: 'networking.outbound[0].port', reason: /1 to 65535/ },
      { what: 'an outbound has no service', input: outbound({ port: 20001 }), path: 'networking.outbound[0].service', reason: /is required/ },
      { what: 'an outbound service is not a DNS label', input: outbound({ port: 20001, service: 'web.default' }), path: 'networking.outbound[0].service', reason: /DNS label/ },
      {
        what: 'two inbounds share a port',
        input: dataplane({ address: '10.0.0.1', inbound: [{ port: 80, tags: service }, { port: 80, tags: { service: 'other' } }] }),
        path: 'networking.inbound[1].port',
        reason: /already used by networking\.inbound\[0\]\.port/,
      },
      {
        what: 'two outbounds share a port',
        input: dataplane({ address: '10.0.0.1', outbound: [{ port: 20001, service: 'a' }, { port: 20001, service: 'b' }] }),
        path: 'networking.outbound[1].port',
        reason: /already used by networking\.outbound\[0\]\.port/,
      },
      {
        what: 'an outbound uses an inbound’s port',
        input: dataplane({ address: '10.0.0.1', inbound: [{ port: 80, tags: service }], outbound: [{ port: 80, service: 'web' }] }),
        path: 'networking.outbound[0].port',
        reason: /already used by networking\.inbound\[0\]\.port/,
      },
    ];

    it.each(cases)('reports $path when $what', ({ input, path, reason }) => {
      const issues = issuesOf(input);
      expect(issues).toContainEqual({ path, reason: expect.stringMatching(reason) });
      expect(issues).toHaveLength(1);
    });

    it('reports every issue of a resource at once, not only the first', () => {
      const issues = issuesOf({
        type: 'Dataplane',
        mesh: 'Default',
        name: 'backend-1',
        color: 'blue',
        networking: {
          address: 'example.com',
          inbound: [{ port: 0, tags: { service: 'backend' } }, { port: 10002, servicePort: 99999, tags: {} }],
          outbound: [{ port: 10002, service: 'web' }],
        },
      });
      expect(issues.map((issue) => issue.path).sort()).toEqual(
        [
          'color',
          'mesh',
          'networking.address',
          'networking.inbound[0].port',
          'networking.inbound[1].servicePort',
          'networking.inbound[1].tags.service',
          'networking.outbound[0].port',
        ].sort(),
      );
      for (const issue of issues) expect(issue.reason).not.toBe('');
    });
  });

  describe('the input contract every store shares (issue 11)', () => {
    const tagged = (tags: Record<string, unknown>) => inbound({ port: 10001, tags: { ...service, ...tags } });
    const LONG = 'k'.repeat(RESOURCE_LIMITS.tagKeyLength + 1);

    it.each([
      { what: 'a NUL in a tag value', tags: { zone: 'a\u0000b' }, path: 'networking.inbound[0].tags.zone', reason: /control characters; U\+0000 is at index 1/ },
      { what: 'a NUL in a tag key', tags: { ['zo\u0000ne']: 'a' }, path: 'networking.inbound[0].tags["zo\\u0000ne"]', reason: /tag key must not contain control characters/ },
      { what: 'a lone high surrogate in a tag value', tags: { zone: 'a\ud800' }, path: 'networking.inbound[0].tags.zone', reason: /lone surrogate U\+D800 is at index 1/ },
      { what: 'a lone low surrogate in a tag key', tags: { ['\udc00']: 'a' }, path: 'networking.inbound[0].tags["\\udc00"]', reason: /lone surrogate U\+DC00/ },
      { what: 'a newline in a tag value', tags: { zone: 'a\nb' }, path: 'networking.inbound[0].tags.zone', reason: /U\+000A/ },
      { what: 'a C1 control in a tag value', tags: { zone: '\u0085' }, path: 'networking.inbound[0].tags.zone', reason: /U\+0085/ },
      { what: 'an empty tag key', tags: { '': 'a' }, path: 'networking.inbound[0].tags[""]', reason: /must not be empty/ },
      { what: 'an over-long tag value', tags: { zone: 'v'.repeat(RESOURCE_LIMITS.tagValueLength + 1) }, path: 'networking.inbound[0].tags.zone', reason: /at most 253 characters/ },
      { what: 'an over-long tag key, quoted cut short in the path', tags: { [LONG]: 'a' }, path: `networking.inbound[0].tags["${'k'.repeat(64)}…" (254 characters)]`, reason: /at most 253/ },
    ])('refuses $what, naming the tag', ({ tags, path, reason }) => {
      const issues = issuesOf(tagged(tags));
      expect(issues).toEqual([{ path, reason: expect.stringMatching(reason) }]);
    });

    it('accepts tags of any well-formed text, emoji and other scripts included, and keeps them exactly', () => {
      // As JSON.parse reads a body: `__proto__` is an own key there, not the prototype.
      const tags = JSON.parse('{"zone": "eu-west ✓ 🚀 ünïcödé \\"quoted\\" \\\\", "kuma.io/zone": "東京", "__proto__": "kept as a tag"}') as Record<string, unknown>;
      const result = validate(tagged(tags));
      expect(result.ok).toBe(true);
      const kept = result.ok && result.resource.type === 'Dataplane' ? result.resource.networking.inbound[0]?.tags : undefined;
      expect(Object.entries(kept ?? {})).toEqual([
        ['__proto__', 'kept as a tag'],
        ['kuma.io/zone', '東京'],
        ['service', 'backend'],
        ['zone', 'eu-west ✓ 🚀 ünïcödé "quoted" \\'],
      ]);
    });

    it('refuses more tags, inbounds or outbounds than the limits, without reading each one', () => {
      const manyTags = Object.fromEntries(Array.from({ length: RESOURCE_LIMITS.tags }, (_, i) => [`t${i}`, 'NUL\u0000']));
      expect(issuesOf(tagged(manyTags))).toEqual([
        { path: 'networking.inbound[0].tags', reason: `must have at most ${RESOURCE_LIMITS.tags} tags; it has ${RESOURCE_LIMITS.tags + 1}` },
      ]);
      const inbounds = Array.from({ length: RESOURCE_LIMITS.inbound + 1 }, () => ({ port: 0 }));
      expect(issuesOf(dataplane({ address: '10.0.0.1', inbound: inbounds }))).toEqual([
        { path: 'networking.inbound', reason: `must have at most ${RESOURCE_LIMITS.inbound} entries; it has ${RESOURCE_LIMITS.inbound + 1}` },
      ]);
      const outbounds = Array.from({ length: RESOURCE_LIMITS.outbound + 1 }, () => ({ port: 0 }));
      expect(issuesOf(dataplane({ address: '10.0.0.1', outbound: outbounds })).map((issue) => issue.path)).toEqual(['networking.outbound']);
    });

    it('refuses a Dataplane whose fields are each within limits but whose whole is over the size limit', () => {
      const tags = Object.fromEntries(Array.from({ length: RESOURCE_LIMITS.tags - 1 }, (_, i) => [`tag-${i}`, 'v'.repeat(RESOURCE_LIMITS.tagValueLength)]));
      const inbounds = Array.from({ length: 40 }, (_, i) => ({ port: 10001 + i, tags: { ...service, ...tags } }));
      const issues = issuesOf(dataplane({ address: '10.0.0.1', inbound: inbounds }));
      expect(issues).toEqual([{ path: '', reason: expect.stringMatching(/^is \d+ bytes as JSON; a Dataplane may have at most 262144$/) }]);
    });

    it('lists the first issues of a body with thousands and counts the rest', () => {
      const unknown = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`field${i}`, i]));
      const issues = issuesOf({ type: 'Mesh', name: 'default', ...unknown });
      expect(issues).toHaveLength(RESOURCE_LIMITS.issues + 1);
      expect(issues.at(-1)).toEqual({ path: '', reason: `and ${10_000 - RESOURCE_LIMITS.issues} more issues` });
    });
  });
});
