import { describe, expect, it } from 'vitest';
import { inboundListenerName, localClusterName, outboundListenerName, serviceResourceName } from '../../src/mesh/names.js';

describe('contract names (DESIGN §6)', () => {
  it('names an inbound listener inbound:<address>:<port>', () => {
    expect(inboundListenerName('10.0.0.1', 10001)).toBe('inbound:10.0.0.1:10001');
  });

  it('names an outbound listener outbound:127.0.0.1:<port>', () => {
    expect(outboundListenerName(20001)).toBe('outbound:127.0.0.1:20001');
  });

  it('names the static cluster behind an inbound localhost:<servicePort>', () => {
    expect(localClusterName(9001)).toBe('localhost:9001');
  });

  it('names a service’s resources after the service, which is what xds:///<service> asks for', () => {
    expect(serviceResourceName('backend')).toBe('backend');
  });
});
