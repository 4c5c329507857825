import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { anyOf, encodeResource } from '../../src/xds/encode.js';
import { contentHash } from '../../src/xds/content-hash.js';
import { LISTENER } from '../../src/xds/type-urls.js';

const TCP_PROXY = 'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';
const HTTP_CONNECTION_MANAGER = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER = 'envoy.extensions.filters.http.router.v3.Router';

/** What protobufjs encodes from an `Any` given as `{ '@type': url, ...fields }`. */
const byTypeName = (messageName: string, fields: object = {}) => ({ '@type': `type.googleapis.com/${messageName}`, ...fields });

describe('versions stay what earlier releases computed (I6 across instances of two releases)', () => {
  it('hashes the parts of a version as one run of bytes, as a hash fed part by part does', () => {
    const cases: (string | Uint8Array)[][] = [['one part'], ['two ', 'parts'], ['type.googleapis.com/x', new Uint8Array([0, 1, 2, 255])], [new Uint8Array(0)], ['ünïcödé ', '✓'], []];
    for (const parts of cases) {
      const reference = createHash('sha256');
      for (const part of parts) reference.update(part);
      expect(contentHash(...parts)).toBe(reference.digest('base64url').slice(0, 16));
    }
  });

  it('encodes an embedded Any made beforehand to the bytes protobufjs makes of its type name and fields', () => {
    const tcp = (typedConfig: (name: string, fields?: object) => object) =>
      encodeResource(LISTENER, 'inbound', {
        name: 'inbound',
        filter_chains: [{ filters: [{ name: 'envoy.filters.network.tcp_proxy', typed_config: typedConfig(TCP_PROXY, { stat_prefix: 'backend', cluster: 'backend', max_connect_attempts: { value: 3 } }) }] }],
      });
    const api = (typedConfig: (name: string, fields?: object) => object) =>
      encodeResource(LISTENER, 'backend', {
        name: 'backend',
        api_listener: {
          api_listener: typedConfig(HTTP_CONNECTION_MANAGER, {
            stat_prefix: 'backend',
            rds: { route_config_name: 'backend', config_source: { ads: {}, resource_api_version: 'V3' } },
            http_filters: [{ name: 'envoy.filters.http.router', typed_config: typedConfig(ROUTER) }],
          }),
        },
      });
    for (const build of [tcp, api]) {
      const [before, now] = [build(byTypeName), build(anyOf)];
      expect(Buffer.from(now.any).equals(Buffer.from(before.any))).toBe(true);
      expect(now.version).toBe(before.version);
    }
  });
});
