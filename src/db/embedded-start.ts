// How the embedded database (PGlite) starts: its own start parameters, with PostgreSQL's page cache sized here.
import { PGlite } from '@electric-sql/pglite';
import { EMBEDDED_BUFFERS_MB_DEFAULT } from '../config.js';

/**
 * How the embedded database starts: PGlite's own start parameters, with PostgreSQL's page cache (`shared_buffers`) at
 * `buffersMb`. PGlite allocates and zeroes the whole cache in its WebAssembly memory at every start, so the data
 * directory's 128 MB cost half a second of CPU per start and 130 MB of resident memory for the life of the process;
 * pages the cache does not hold are read from the operating system's file cache instead (docs/deploy.md).
 */
export function embeddedStartParams(buffersMb = EMBEDDED_BUFFERS_MB_DEFAULT): string[] {
  return [...PGlite.defaultStartParams, '-c', `shared_buffers=${buffersMb}MB`];
}
