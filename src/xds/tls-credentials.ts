import { experimental, type ServerCredentials } from '@grpc/grpc-js';

type Provider = experimental.CertificateProvider;

/** TLS material that may change while served: identity's `TlsFiles`. */
export interface TlsSource {
  readonly material: { readonly cert: Buffer; readonly key: Buffer; readonly clientCa?: Buffer };
  /** Calls `listener` with each new material. */
  onChange(listener: (material: TlsSource['material']) => void): unknown;
}

/**
 * gRPC server credentials serving `tls` and following its changes: grpc-js swaps the secure
 * context of its HTTP/2 server when a certificate provider reports new files.
 */
export function grpcServerCredentials(tls: TlsSource): ServerCredentials {
  const identity = new Set<experimental.IdentityCertificateUpdateListener>();
  const authorities = new Set<experimental.CaCertificateUpdateListener>();
  tls.onChange(({ cert, key, clientCa }) => {
    for (const listener of identity) listener({ certificate: cert, privateKey: key });
    if (clientCa !== undefined) for (const listener of authorities) listener({ caCertificate: clientCa });
  });
  // The first material goes out on a microtask: grpc-js 1.14 registers the listeners before the
  // server's own watcher, so an answer given at once would never reach the server, which would
  // then drop every connection as "credentials not loaded".
  const provider: Provider = {
    addIdentityCertificateListener(listener) {
      identity.add(listener);
      queueMicrotask(() => listener({ certificate: tls.material.cert, privateKey: tls.material.key }));
    },
    removeIdentityCertificateListener: (listener) => identity.delete(listener),
    addCaCertificateListener(listener) {
      authorities.add(listener);
      const { clientCa } = tls.material;
      if (clientCa !== undefined) queueMicrotask(() => listener({ caCertificate: clientCa }));
    },
    removeCaCertificateListener: (listener) => authorities.delete(listener),
  };
  const mutual = tls.material.clientCa !== undefined;
  // grpc-js 1.14 names this function's first two parameters (ca, identity) but hands them to the
  // credentials as (identity, ca); one provider serving both leaves the order moot.
  return experimental.createCertificateProviderServerCredentials(provider, mutual ? provider : null, mutual);
}
