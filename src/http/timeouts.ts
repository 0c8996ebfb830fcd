// Deadlines of the HTTP server, so that no peer holds a socket by sending slowly (see docs/security.md):
// - the request headers must arrive within HTTP_HEADERS_TIMEOUT_SECONDS;
// - a body that is not an upload within HTTP_BODY_TIMEOUT_SECONDS of its headers (such bodies are at most
//   MAX_BODY_BYTES); an upload within HTTP_REQUEST_TIMEOUT_SECONDS;
// - a socket with no traffic either way for HTTP_IDLE_TIMEOUT_SECONDS is closed (a stalled upload included);
// - an idle keep-alive connection is closed after HTTP_KEEP_ALIVE_SECONDS.
import type http from 'node:http';
import type net from 'node:net';
import type { Config } from '../config.js';

/** How long a socket whose request body was refused stays readable after the answer (see lingerClose). */
export const LINGER_CLOSE_MS = 2000;

/**
 * An answer sent before the request body was read (a refusal) is followed by closing the connection. Closed at
 * once, the socket would answer the client's bytes still in flight with a reset, and the client would lose the
 * answer. So the write side is shut (the client sees the end of the answer) while what still arrives is read and
 * dropped for at most LINGER_CLOSE_MS; then the socket is destroyed.
 */
function lingerClose(socket: net.Socket): void {
  socket.destroySoon = function lingering(this: net.Socket) {
    if (this.writable) this.end();
    this.resume();
    setTimeout(() => this.destroy(), LINGER_CLOSE_MS).unref();
  };
}

export function applyServerTimeouts(server: http.Server, t: Config['http']): void {
  server.headersTimeout = t.headersTimeout * 1000;
  server.requestTimeout = t.requestTimeout * 1000;
  server.keepAliveTimeout = t.keepAliveTimeout * 1000;
  server.timeout = t.idleTimeout * 1000; // with no 'timeout' listener, Node destroys the idle socket
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3): nothing to wait for
    // or to linger on, so most reads pay for no timer and no listeners.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return;
    res.once('finish', () => {
      if (!req.complete) lingerClose(req.socket);
    });
    const type = req.headers['content-type'] ?? '';
    if (/^multipart\//i.test(type) || req.readableEnded) return;
    const timer = setTimeout(() => {
      // Only the body is late: the peer gets no answer, the socket and its buffers are freed now.
      if (!req.readableEnded) req.socket.destroy();
    }, t.bodyTimeout * 1000);
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    req.once('close', clear);
  });
}
