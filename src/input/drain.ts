// Refusals reach the sender. A request refused before (or while) its body is read — no key, a missing scope, a
// malformed or oversized body, no upload slot — is answered at once; the rest of its body is then read and dropped,
// up to REFUSED_BODY_DRAIN_BYTES, so that clients that send their whole body before reading the answer (Node's fetch,
// browsers) get the answer rather than a reset: closing a socket with unread bytes in it makes the kernel answer
// the sender with RST, and the sender's write fails (EPIPE) before it has read anything. Past the limit the socket
// is closed (the client may then see a reset: it was sending more than any refused request may cost). Slow senders
// are cut by the HTTP body and idle deadlines as always. The connection stays usable when the body ends in time.
import type { IncomingMessage } from 'node:http';

/** Reads and drops what is left of `req`'s body, up to `limit` bytes; past them, or with `limit` 0, closes the socket. */
export function drainRefusedBody(req: IncomingMessage, limit: number): void {
  if (req.readableEnded || req.destroyed) return;
  if (limit <= 0) {
    req.socket?.destroySoon?.();
    return;
  }
  let dropped = 0;
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > limit) {
      req.off('data', onData);
      req.socket?.destroy();
    }
  };
  req.on('data', onData);
  req.once('end', () => req.off('data', onData));
  req.resume();
}
