-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "PermissionValue" AS ENUM ('allow', 'deny');

-- CreateEnum
CREATE TYPE "ApiKeyType" AS ENUM ('guest', 'user', 'super');

-- CreateEnum
CREATE TYPE "DownloadState" AS ENUM ('visible', 'moderated', 'deleted', 'draft');

-- CreateEnum
CREATE TYPE "VersionState" AS ENUM ('visible', 'deleted');

-- CreateEnum
CREATE TYPE "ValidationStatus" AS ENUM ('passed', 'failed', 'pending', 'skipped');

-- CreateEnum
CREATE TYPE "CommentState" AS ENUM ('visible', 'moderated', 'deleted');

-- CreateTable
CREATE TABLE "user" (
    "id" SERIAL NOT NULL,
    "username" TEXT NOT NULL,
    "isAdmin" BOOLEAN NOT NULL DEFAULT false,
    "isModerator" BOOLEAN NOT NULL DEFAULT false,
    "primaryGroupId" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "title" TEXT NOT NULL DEFAULT '',
    "isBuiltIn" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "user_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group_membership" (
    "userId" INTEGER NOT NULL,
    "groupId" INTEGER NOT NULL,

    CONSTRAINT "user_group_membership_pkey" PRIMARY KEY ("userId","groupId")
);

-- CreateTable
CREATE TABLE "group_permission" (
    "groupId" INTEGER NOT NULL,
    "permission" TEXT NOT NULL,

    CONSTRAINT "group_permission_pkey" PRIMARY KEY ("groupId","permission")
);

-- CreateTable
CREATE TABLE "category_permission" (
    "categoryId" INTEGER NOT NULL,
    "groupId" INTEGER NOT NULL,
    "permission" TEXT NOT NULL,
    "value" "PermissionValue" NOT NULL,

    CONSTRAINT "category_permission_pkey" PRIMARY KEY ("categoryId","groupId","permission")
);

-- CreateTable
CREATE TABLE "api_key" (
    "id" SERIAL NOT NULL,
    "keyHash" TEXT NOT NULL,
    "type" "ApiKeyType" NOT NULL,
    "userId" INTEGER,
    "scopes" TEXT[],
    "title" TEXT NOT NULL DEFAULT '',
    "isActive" BOOLEAN NOT NULL DEFAULT true,
    "expiresAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),
    "lastUsedAt" TIMESTAMP(3),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "category" (
    "id" SERIAL NOT NULL,
    "parentId" INTEGER,
    "title" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "displayOrder" INTEGER NOT NULL DEFAULT 0,
    "downloadCount" INTEGER NOT NULL DEFAULT 0,
    "faIcon" TEXT NOT NULL DEFAULT '',
    "iconColor" TEXT NOT NULL DEFAULT '',
    "requireApproval" BOOLEAN NOT NULL DEFAULT false,
    "requireCommentApproval" BOOLEAN NOT NULL DEFAULT false,
    "enableVersioning" BOOLEAN NOT NULL DEFAULT true,
    "allowMultiFile" BOOLEAN NOT NULL DEFAULT true,
    "maxTeamMembers" INTEGER NOT NULL DEFAULT 5,
    "maxFilesPerVersion" INTEGER NOT NULL DEFAULT 10,
    "maxFileSize" BIGINT NOT NULL DEFAULT 104857600,
    "maxVersionSize" BIGINT NOT NULL DEFAULT 1073741824,
    "maxDownloadSize" BIGINT NOT NULL DEFAULT 10737418240,
    "allowedFileTypes" TEXT NOT NULL DEFAULT '',
    "previewTextEnabled" BOOLEAN NOT NULL DEFAULT false,
    "previewImageEnabled" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "category_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "prefix" (
    "id" SERIAL NOT NULL,
    "title" TEXT NOT NULL,

    CONSTRAINT "prefix_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "category_prefix" (
    "categoryId" INTEGER NOT NULL,
    "prefixId" INTEGER NOT NULL,

    CONSTRAINT "category_prefix_pkey" PRIMARY KEY ("categoryId","prefixId")
);

-- CreateTable
CREATE TABLE "download" (
    "id" SERIAL NOT NULL,
    "categoryId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "title" TEXT NOT NULL,
    "tagLine" TEXT NOT NULL DEFAULT '',
    "description" TEXT NOT NULL DEFAULT '',
    "iconUrl" TEXT NOT NULL DEFAULT '',
    "coverUrl" TEXT,
    "ratingAvg" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "ratingCount" INTEGER NOT NULL DEFAULT 0,
    "reviewCount" INTEGER NOT NULL DEFAULT 0,
    "downloadCount" INTEGER NOT NULL DEFAULT 0,
    "viewCount" INTEGER NOT NULL DEFAULT 0,
    "lastUpdate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "state" "DownloadState" NOT NULL DEFAULT 'visible',
    "stateBeforeDelete" "DownloadState",
    "deletedAt" TIMESTAMP(3),
    "prefixId" INTEGER,
    "currentVersionId" INTEGER,
    "isPasswordProtected" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "download_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "version" (
    "id" SERIAL NOT NULL,
    "downloadId" INTEGER NOT NULL,
    "versionString" TEXT NOT NULL DEFAULT '',
    "releaseDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "downloadCount" INTEGER NOT NULL DEFAULT 0,
    "state" "VersionState" NOT NULL DEFAULT 'visible',

    CONSTRAINT "version_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "file" (
    "id" SERIAL NOT NULL,
    "versionId" INTEGER NOT NULL,
    "filename" TEXT NOT NULL,
    "displayLabel" TEXT NOT NULL DEFAULT '',
    "fileSize" BIGINT NOT NULL DEFAULT 0,
    "fileHash" TEXT NOT NULL DEFAULT '',
    "mimeType" TEXT NOT NULL DEFAULT 'application/octet-stream',
    "isPrimary" BOOLEAN NOT NULL DEFAULT false,
    "isExternallyLinked" BOOLEAN NOT NULL DEFAULT false,
    "externalUrl" TEXT,
    "isLinkOnly" BOOLEAN NOT NULL DEFAULT false,
    "externalSourceType" TEXT,
    "validationStatus" "ValidationStatus" NOT NULL DEFAULT 'pending',
    "validationAttempts" INTEGER NOT NULL DEFAULT 0,
    "validationError" TEXT,
    "lastAttemptDate" TIMESTAMP(3),
    "isAvailable" BOOLEAN NOT NULL DEFAULT true,
    "displayOrder" INTEGER NOT NULL DEFAULT 0,
    "downloadCount" INTEGER NOT NULL DEFAULT 0,
    "storageKey" TEXT,
    "isQuarantined" BOOLEAN NOT NULL DEFAULT false,
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "deletedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "file_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "comment" (
    "id" SERIAL NOT NULL,
    "downloadId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "commentDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "message" TEXT NOT NULL,
    "state" "CommentState" NOT NULL DEFAULT 'visible',
    "stateBeforeDelete" "CommentState",
    "lastEditDate" TIMESTAMP(3),
    "editCount" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "comment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "comment_edit" (
    "id" SERIAL NOT NULL,
    "commentId" INTEGER NOT NULL,
    "oldMessage" TEXT NOT NULL,
    "editorId" INTEGER NOT NULL,
    "editDate" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "comment_edit_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tag" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,

    CONSTRAINT "tag_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "download_tag" (
    "downloadId" INTEGER NOT NULL,
    "tagId" INTEGER NOT NULL,

    CONSTRAINT "download_tag_pkey" PRIMARY KEY ("downloadId","tagId")
);

-- CreateTable
CREATE TABLE "team_member" (
    "downloadId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "addedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "team_member_pkey" PRIMARY KEY ("downloadId","userId")
);

-- CreateTable
CREATE TABLE "audit_log" (
    "id" SERIAL NOT NULL,
    "action" TEXT NOT NULL,
    "contentType" TEXT NOT NULL,
    "contentId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "date" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "moderator_log" (
    "id" SERIAL NOT NULL,
    "action" TEXT NOT NULL,
    "contentType" TEXT NOT NULL,
    "contentId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "date" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "moderator_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "user_username_key" ON "user"("username");

-- CreateIndex
CREATE UNIQUE INDEX "user_group_name_key" ON "user_group"("name");

-- CreateIndex
CREATE INDEX "user_group_membership_groupId_idx" ON "user_group_membership"("groupId");

-- CreateIndex
CREATE INDEX "category_permission_groupId_idx" ON "category_permission"("groupId");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_keyHash_key" ON "api_key"("keyHash");

-- CreateIndex
CREATE INDEX "category_parentId_idx" ON "category"("parentId");

-- CreateIndex
CREATE INDEX "category_displayOrder_id_idx" ON "category"("displayOrder", "id");

-- CreateIndex
CREATE INDEX "category_title_id_idx" ON "category"("title", "id");

-- CreateIndex
CREATE INDEX "category_downloadCount_id_idx" ON "category"("downloadCount", "id");

-- CreateIndex
CREATE INDEX "category_prefix_prefixId_idx" ON "category_prefix"("prefixId");

-- CreateIndex
CREATE UNIQUE INDEX "download_currentVersionId_key" ON "download"("currentVersionId");

-- CreateIndex
CREATE INDEX "download_lastUpdate_id_idx" ON "download"("lastUpdate", "id");

-- CreateIndex
CREATE INDEX "download_createdDate_id_idx" ON "download"("createdDate", "id");

-- CreateIndex
CREATE INDEX "download_downloadCount_id_idx" ON "download"("downloadCount", "id");

-- CreateIndex
CREATE INDEX "download_viewCount_id_idx" ON "download"("viewCount", "id");

-- CreateIndex
CREATE INDEX "download_title_id_idx" ON "download"("title", "id");

-- CreateIndex
CREATE INDEX "download_categoryId_lastUpdate_id_idx" ON "download"("categoryId", "lastUpdate", "id");

-- CreateIndex
CREATE INDEX "download_prefixId_idx" ON "download"("prefixId");

-- CreateIndex
CREATE INDEX "download_state_lastUpdate_idx" ON "download"("state", "lastUpdate");

-- CreateIndex
CREATE INDEX "download_userId_idx" ON "download"("userId");

-- CreateIndex
CREATE INDEX "download_deletedAt_idx" ON "download"("deletedAt");

-- CreateIndex
CREATE INDEX "version_downloadId_releaseDate_idx" ON "version"("downloadId", "releaseDate");

-- CreateIndex
CREATE INDEX "file_versionId_isDeleted_displayOrder_id_idx" ON "file"("versionId", "isDeleted", "displayOrder", "id");

-- CreateIndex
CREATE INDEX "file_fileSize_id_idx" ON "file"("fileSize", "id");

-- CreateIndex
CREATE INDEX "file_downloadCount_id_idx" ON "file"("downloadCount", "id");

-- CreateIndex
CREATE INDEX "comment_downloadId_state_commentDate_id_idx" ON "comment"("downloadId", "state", "commentDate", "id");

-- CreateIndex
CREATE INDEX "comment_downloadId_lastEditDate_id_idx" ON "comment"("downloadId", "lastEditDate", "id");

-- CreateIndex
CREATE INDEX "comment_commentDate_id_idx" ON "comment"("commentDate", "id");

-- CreateIndex
CREATE INDEX "comment_userId_commentDate_idx" ON "comment"("userId", "commentDate");

-- CreateIndex
CREATE INDEX "comment_edit_commentId_editDate_idx" ON "comment_edit"("commentId", "editDate");

-- CreateIndex
CREATE UNIQUE INDEX "tag_name_key" ON "tag"("name");

-- CreateIndex
CREATE INDEX "download_tag_tagId_idx" ON "download_tag"("tagId");

-- CreateIndex
CREATE INDEX "team_member_userId_idx" ON "team_member"("userId");

-- CreateIndex
CREATE INDEX "audit_log_contentType_contentId_idx" ON "audit_log"("contentType", "contentId");

-- CreateIndex
CREATE INDEX "audit_log_date_idx" ON "audit_log"("date");

-- CreateIndex
CREATE INDEX "moderator_log_contentType_contentId_idx" ON "moderator_log"("contentType", "contentId");

-- CreateIndex
CREATE INDEX "moderator_log_date_idx" ON "moderator_log"("date");

-- AddForeignKey
ALTER TABLE "user" ADD CONSTRAINT "user_primaryGroupId_fkey" FOREIGN KEY ("primaryGroupId") REFERENCES "user_group"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_membership" ADD CONSTRAINT "user_group_membership_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_permission" ADD CONSTRAINT "group_permission_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "category_permission" ADD CONSTRAINT "category_permission_categoryId_fkey" FOREIGN KEY ("categoryId") REFERENCES "category"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "category_permission" ADD CONSTRAINT "category_permission_groupId_fkey" FOREIGN KEY ("groupId") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "category" ADD CONSTRAINT "category_parentId_fkey" FOREIGN KEY ("parentId") REFERENCES "category"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "category_prefix" ADD CONSTRAINT "category_prefix_categoryId_fkey" FOREIGN KEY ("categoryId") REFERENCES "category"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "category_prefix" ADD CONSTRAINT "category_prefix_prefixId_fkey" FOREIGN KEY ("prefixId") REFERENCES "prefix"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download" ADD CONSTRAINT "download_categoryId_fkey" FOREIGN KEY ("categoryId") REFERENCES "category"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download" ADD CONSTRAINT "download_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download" ADD CONSTRAINT "download_prefixId_fkey" FOREIGN KEY ("prefixId") REFERENCES "prefix"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download" ADD CONSTRAINT "download_currentVersionId_fkey" FOREIGN KEY ("currentVersionId") REFERENCES "version"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "version" ADD CONSTRAINT "version_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "file" ADD CONSTRAINT "file_versionId_fkey" FOREIGN KEY ("versionId") REFERENCES "version"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "comment" ADD CONSTRAINT "comment_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "comment" ADD CONSTRAINT "comment_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "comment_edit" ADD CONSTRAINT "comment_edit_commentId_fkey" FOREIGN KEY ("commentId") REFERENCES "comment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download_tag" ADD CONSTRAINT "download_tag_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download_tag" ADD CONSTRAINT "download_tag_tagId_fkey" FOREIGN KEY ("tagId") REFERENCES "tag"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_member" ADD CONSTRAINT "team_member_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_member" ADD CONSTRAINT "team_member_userId_fkey" FOREIGN KEY ("userId") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- At most one primary file per version among files that are not soft-deleted.
-- (A partial index: Prisma's schema language cannot express it, so it is written here by hand.)
CREATE UNIQUE INDEX "file_one_primary_per_version" ON "file"("versionId") WHERE "isPrimary" AND NOT "isDeleted";
