-- SHA-1 and SHA-512 beside the SHA-256 of every stored file, for lookups by hash (launchers identify installed
-- files by any of the three). Files stored before this migration get theirs from the backfill job.
ALTER TABLE "file" ADD COLUMN "sha1" TEXT NOT NULL DEFAULT '',
ADD COLUMN "sha512" TEXT NOT NULL DEFAULT '';

CREATE INDEX "file_fileHash_idx" ON "file"("fileHash");
CREATE INDEX "file_sha1_idx" ON "file"("sha1");
CREATE INDEX "file_sha512_idx" ON "file"("sha512");
