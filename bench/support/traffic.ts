/** The xDS types a fake Envoy watches, by their short names. */
export type ShortType = 'CDS' | 'EDS' | 'LDS' | 'RDS' | 'SDS';

/** Responses and their bytes (with gRPC's 5-byte prefix) received, per type. */
export interface Traffic {
  readonly responses: Record<ShortType, number>;
  readonly bytes: Record<ShortType, number>;
}

export function noTraffic(): { responses: Record<ShortType, number>; bytes: Record<ShortType, number> } {
  return { responses: { CDS: 0, EDS: 0, LDS: 0, RDS: 0, SDS: 0 }, bytes: { CDS: 0, EDS: 0, LDS: 0, RDS: 0, SDS: 0 } };
}

/** Every type's bytes. */
export function totalBytes(traffic: Traffic): number {
  return Object.values(traffic.bytes).reduce((total, bytes) => total + bytes, 0);
}

/** `traffics` added up. */
export function summed(traffics: readonly Traffic[]): Traffic {
  const total = noTraffic();
  for (const traffic of traffics) {
    for (const type of Object.keys(total.responses) as ShortType[]) {
      total.responses[type] += traffic.responses[type];
      total.bytes[type] += traffic.bytes[type];
    }
  }
  return total;
}
