-- Statistics: downloads and views of each download per day (UTC).

-- CreateTable
CREATE TABLE "download_daily_stats" (
    "downloadId" INTEGER NOT NULL,
    "day" DATE NOT NULL,
    "downloads" INTEGER NOT NULL DEFAULT 0,
    "views" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "download_daily_stats_pkey" PRIMARY KEY ("downloadId","day")
);

-- AddForeignKey
ALTER TABLE "download_daily_stats" ADD CONSTRAINT "download_daily_stats_downloadId_fkey" FOREIGN KEY ("downloadId") REFERENCES "download"("id") ON DELETE CASCADE ON UPDATE CASCADE;
