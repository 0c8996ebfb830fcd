// A global cap on uploads in progress (REST and GraphQL multipart together): each holds a socket, a temporary
// file and a hash for as long as its bytes flow, so past MAX_CONCURRENT_UPLOADS a new one is refused at once with
// 503 server_busy and Retry-After, before a byte of its body is read.
import { ApiError } from '../errors.js';

export const RETRY_AFTER_SECONDS = 5;

export class UploadSlots {
  private used = 0;
  constructor(readonly max: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes a slot, or throws 503 server_busy; the returned function gives it back (once). */
  acquire(): () => void {
    if (this.used >= this.max) {
      throw new ApiError(
        'server_busy',
        `The server is handling ${this.max} uploads already; try again in a few seconds.`,
        { retry_after: RETRY_AFTER_SECONDS },
        { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      );
    }
    this.used++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.used--;
      }
    };
  }
}
