// Requests Node's HTTP parser refuses before any handler sees them (a request line and headers over Node's 16 KiB
// limit, bytes that are not HTTP) are answered in the service's error format, with a contract code, rather than
// Node's bare status line. A peer that was too slow keeps Node's own answer (408), and a reset socket gets none.
import http from 'node:http';
import type { Duplex } from 'node:stream';

function answerOf(code: string | undefined): [number, string, string] | null {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'request_too_large',
        'The request line and headers are too large (at most 16 KiB together): send long values in the body.',
      ];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'request_too_large', 'The chunk extensions of the request body are too large.'];
    case 'ECONNRESET':
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return null;
    default:
      return [400, 'invalid_input', 'The request is not valid HTTP/1.1.'];
  }
}

export function answerClientErrors(server: http.Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const answer = answerOf(err.code);
    const pending = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (!socket.writable || pending?.headersSent) {
      socket.destroy();
      return;
    }
    if (!answer) {
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
        socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    const [status, code, message] = answer;
    const body = JSON.stringify({ errors: [{ code, message, params: {} }] });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
    // The rest of what the peer sends is not read; the socket goes once the answer is out (or after a second).
    setTimeout(() => socket.destroy(), 1000).unref();
  });
}
