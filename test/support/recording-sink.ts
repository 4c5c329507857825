import type { EndStatus, StreamSink, XdsResponse } from '../../src/xds/index.js';

/** A stream writer that keeps what it is told: what the sessions sent, and how they ended the stream. */
export class RecordingSink implements StreamSink {
  readonly sent: XdsResponse[] = [];
  ended: EndStatus | undefined;
  send(response: XdsResponse): number {
    this.sent.push(response);
    return 1;
  }
  end(status: EndStatus): void {
    this.ended = status;
  }
}
