// Blob storage behind one small interface. The local driver keeps blobs under DATA_DIR/files.
export interface Storage {
  /** Removes blobs by key; keys that no longer exist are ignored. */
  remove(keys: readonly string[]): Promise<void>;
}
