import { describe, expect, it } from 'vitest';
import { lookupType } from '../../src/xds/protos.js';
import { toProtoJson } from '../../src/xds/proto-json.js';

/** Encodes `fields` as `type` and reads it back as proto3 JSON: what a client on the wire would see. */
function roundTrip(name: string, fields: object): Record<string, unknown> {
  const type = lookupType(name);
  return toProtoJson(type, type.decode(type.encode(type.fromObject(fields)).finish()));
}

describe('canonical proto3 JSON, as Envoy prints its config_dump', () => {
  it('writes durations as seconds with the fraction in 3, 6 or 9 digits', () => {
    const cluster = (timeout: object) => roundTrip('envoy.config.cluster.v3.Cluster', { name: 'c', connect_timeout: timeout });
    expect(cluster({ seconds: 5 }).connect_timeout).toBe('5s');
    expect(cluster({ seconds: 0, nanos: 250_000_000 }).connect_timeout).toBe('0.250s');
    expect(cluster({ seconds: 1, nanos: 1_500 }).connect_timeout).toBe('1.000001500s');
  });

  it('unwraps wrapper types and leaves out fields that hold their default, even when they were sent', () => {
    const json = roundTrip('envoy.config.cluster.v3.Cluster', {
      name: 'c',
      lb_policy: 'ROUND_ROBIN',
      per_connection_buffer_limit_bytes: { value: 0 },
      respect_dns_ttl: false,
    });
    // ROUND_ROBIN is enum value 0 and respect_dns_ttl a plain bool: no presence, so no field.
    expect(json).toEqual({ name: 'c', per_connection_buffer_limit_bytes: 0 });
  });

  it('writes enums by name and 64-bit integers as strings', () => {
    const json = roundTrip('envoy.config.cluster.v3.Cluster', {
      name: 'c',
      type: 'EDS',
      common_lb_config: { healthy_panic_threshold: { value: 50 } },
      lb_subset_config: { fallback_policy: 'ANY_ENDPOINT' },
      dns_refresh_rate: { seconds: 90 },
    });
    expect(json).toMatchObject({ type: 'EDS', lb_subset_config: { fallback_policy: 'ANY_ENDPOINT' }, dns_refresh_rate: '90s' });
    expect(json.common_lb_config).toEqual({ healthy_panic_threshold: { value: 50 } });
    const timeout = roundTrip('google.protobuf.Duration', { seconds: '9007199254740993' });
    expect(timeout).toEqual({ seconds: '9007199254740993' });
  });

  it('expands an Any into its @type and the fields of the message it holds', () => {
    const json = roundTrip('envoy.config.listener.v3.Filter', {
      name: 'envoy.filters.network.tcp_proxy',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
        stat_prefix: 'backend',
        cluster: 'backend',
        max_connect_attempts: { value: 3 },
      },
    });
    expect(json.typed_config).toEqual({
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
      stat_prefix: 'backend',
      cluster: 'backend',
      max_connect_attempts: 3,
    });
  });

  it('writes a Struct as the JSON object it stands for', () => {
    const json = roundTrip('envoy.config.core.v3.Metadata', {
      filter_metadata: {
        chancery: {
          fields: {
            // protobufjs's copy of struct.proto has camelCase field names.
            mesh: { stringValue: 'default' },
            ports: { listValue: { values: [{ numberValue: 1 }, { numberValue: 2 }] } },
            tls: { boolValue: false },
            none: { nullValue: 'NULL_VALUE' },
          },
        },
      },
    });
    expect(json).toEqual({ filter_metadata: { chancery: { mesh: 'default', ports: [1, 2], tls: false, none: null } } });
  });
});
