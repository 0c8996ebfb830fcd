-- Releases: a version's channel, changelog, what it runs on and what it needs; a download's current version may be
-- pinned by an editor instead of following the newest visible release.
CREATE TYPE "VersionChannel" AS ENUM ('release', 'beta', 'alpha');

ALTER TABLE "version" ADD COLUMN "channel" "VersionChannel" NOT NULL DEFAULT 'release',
ADD COLUMN "changelog" TEXT NOT NULL DEFAULT '',
ADD COLUMN "compatibleWith" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
ADD COLUMN "dependencies" JSONB NOT NULL DEFAULT '[]';

ALTER TABLE "download" ADD COLUMN "currentVersionPinned" BOOLEAN NOT NULL DEFAULT false;

CREATE INDEX "version_compatibleWith_idx" ON "version" USING GIN ("compatibleWith");
