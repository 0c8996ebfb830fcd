// The Redis server tests may use (on machines of this project's kind it listens on 127.0.0.1:6379). Tests that need
// it skip with a message when it does not answer.
import net from 'node:net';

export const REDIS_URL = 'redis://127.0.0.1:6379';

/** Whether something accepts connections on Redis's port, within half a second. */
export function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(6379, '127.0.0.1');
    socket.setTimeout(500);
    socket.on('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
