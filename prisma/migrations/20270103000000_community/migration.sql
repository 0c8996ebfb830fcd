-- Community: reviews with ratings, and the `review` permission.

-- CreateEnum
CREATE TYPE "ReviewState" AS ENUM ('visible', 'moderated', 'deleted');

-- CreateTable
CREATE TABLE "review" (
    "id" SERIAL NOT NULL,
    "downloadId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "rating" INTEGER NOT NULL,
    "message" TEXT NOT NULL DEFAULT '',
    "versionString" TEXT NOT NULL DEFAULT '',
    "reviewDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastEditDate" TIMESTAMP(3),
    "state" "ReviewState" NOT NULL DEFAULT 'visible',
    "stateBeforeDelete" "ReviewState",
    "ownerReply" TEXT,
    "ownerReplyDate" TIMESTAMP(3),

    CONSTRAINT "review_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "review_rating_check" CHECK ("rating" BETWEEN 1 AND 5)
);

-- CreateIndex
CREATE UNIQUE INDEX "review_downloadId_userId_key" ON "review"("downloadId", "userId");
CREATE INDEX "review_downloadId_state_reviewDate_id_idx" ON "review"("downloadId", "state", "reviewDate", "id");
CREATE INDEX "review_userId_idx" ON "review"("userId");

-- AddForeignKey
ALTER TABLE "review" ADD CONSTRAINT "review_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "review" ADD CONSTRAINT "review_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- The new permission `review`, held by registered users and up: granted to the built-in groups that already exist
-- (a fresh database gets it from the defaults when the groups are created at first start).
INSERT INTO "group_permission" ("groupId", "permission")
SELECT "id", 'review' FROM "user_group" WHERE "name" IN ('registered', 'moderator', 'administrator')
ON CONFLICT DO NOTHING;

-- Reports of content to the moderators.
CREATE TYPE "ReportContentType" AS ENUM ('download', 'comment', 'file', 'review');
CREATE TYPE "ReportState" AS ENUM ('open', 'resolved');

CREATE TABLE "report" (
    "id" SERIAL NOT NULL,
    "contentType" "ReportContentType" NOT NULL,
    "contentId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "reason" TEXT NOT NULL,
    "state" "ReportState" NOT NULL DEFAULT 'open',
    "reportDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resolvedBy" INTEGER,
    "resolvedDate" TIMESTAMP(3),
    "resolution" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "report_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "report_state_reportDate_id_idx" ON "report"("state", "reportDate", "id");
CREATE INDEX "report_contentType_contentId_idx" ON "report"("contentType", "contentId");
-- One open report per reporter and content: a second report updates the first (INSERT … ON CONFLICT).
CREATE UNIQUE INDEX "report_one_open_per_reporter" ON "report"("contentType", "contentId", "userId") WHERE "state" = 'open';
