// The SQL read of daily statistics: one statement, every day of the range (days without a row answer zeros).
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { StatsRange } from './rules.js';

export interface DailyStat {
  day: string;
  downloads: number;
  views: number;
}

export function readDailyStats(prisma: PrismaClient, downloadId: number, range: StatsRange): Promise<DailyStat[]> {
  return prisma.$queryRaw<DailyStat[]>`
    SELECT to_char(g.day, 'YYYY-MM-DD') AS day,
           COALESCE(s."downloads", 0)::int AS downloads,
           COALESCE(s."views", 0)::int AS views
    FROM generate_series(${range.from}::date, ${range.to}::date, interval '1 day') AS g(day)
    LEFT JOIN "download_daily_stats" s ON s."downloadId" = ${downloadId} AND s."day" = g.day::date
    ORDER BY g.day`;
}
