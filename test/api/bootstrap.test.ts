import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { apiFor, dataplaneBody, putJson } from './api-harness.js';

const api = apiFor({ dataplanes: [dataplaneBody('backend-1')] });

const bootstrap = (query: string, name = 'backend-1') => fetch(`${api.url}/meshes/default/dataplanes/${name}/bootstrap${query}`);

describe('GET /meshes/{mesh}/dataplanes/{name}/bootstrap', () => {
  it('answers an Envoy bootstrap in YAML: node, ADS to this instance over SotW, node on the first request only, admin on loopback', async () => {
    const response = await bootstrap('?format=envoy');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/yaml/);
    const text = await response.text();
    expect(text.startsWith('# Envoy bootstrap for Dataplane default/backend-1')).toBe(true);
    const envoy = parse(text);
    expect(envoy.node).toEqual({ id: 'default.backend-1', cluster: 'backend' });
    const ads = envoy.dynamic_resources.ads_config;
    expect(ads).toMatchObject({ api_type: 'GRPC', transport_api_version: 'V3', set_node_on_first_message_only: true });
    expect(ads.grpc_services).toEqual([
      {
        envoy_grpc: { cluster_name: 'chancery-xds', retry_policy: { retry_back_off: { base_interval: '0.25s', max_interval: '5s' } } },
        initial_metadata: [],
      },
    ]);
    const [xds] = envoy.static_resources.clusters;
    // The harness's instance listens on 0.0.0.0:5678: dialed on loopback.
    expect(xds.type).toBe('STATIC');
    expect(xds.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 5678 });
    expect(xds.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].explicit_http_config.http2_protocol_options.connection_keepalive).toEqual({
      interval: '30s',
      timeout: '5s',
    });
    expect(envoy.admin.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9901 });
  });

  it('dials the address asked for, a hostname through DNS, with Delta and the admin port given', async () => {
    const envoy = parse(await (await bootstrap('?format=envoy&xds=xds.example.internal:15678&adminPort=0&delta=true')).text());
    expect(envoy.dynamic_resources.ads_config.api_type).toBe('DELTA_GRPC');
    const [xds] = envoy.static_resources.clusters;
    expect(xds.type).toBe('STRICT_DNS');
    expect(xds.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: 'xds.example.internal', port_value: 15678 });
    expect(envoy.admin.address.socket_address.port_value).toBe(0);
    const v6 = parse(await (await bootstrap('?xds=[::1]:5678')).text());
    expect(v6.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '::1', port_value: 5678 });
  });

  it('answers the JSON a proxyless gRPC client reads, with its locality and the v3 server feature', async () => {
    await putJson(`${api.url}/meshes/default/dataplanes/client`, { networking: { address: '127.0.0.1' } });
    const response = await bootstrap('?format=grpc&xds=10.0.0.5:5678', 'client');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({
      xds_servers: [{ server_uri: '10.0.0.5:5678', channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
      node: { id: 'default.client', cluster: 'client', locality: { region: 'default', zone: 'default' } },
    });
  });

  it('answers 404 for a Dataplane that does not exist', async () => {
    const response = await bootstrap('?format=grpc', 'nobody');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_STORE_NOT_FOUND' });
  });

  it.each([
    ['?format=istio', 'format'],
    ['?xds=nowhere', 'xds'],
    ['?xds=127.0.0.1:0', 'xds'],
    ['?adminPort=70000', 'adminPort'],
    ['?delta=yes', 'delta'],
    ['?format=grpc&delta=true', 'delta'],
    ['?format=grpc&adminPort=9901', 'adminPort'],
    ['?token=x', 'token'],
  ])('refuses %s with 400 naming the field', async (query, field) => {
    const response = await bootstrap(query);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_API_INVALID_QUERY', field });
  });
});
