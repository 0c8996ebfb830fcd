// Daily statistics of a download (`Download.stats`, and the root `downloadStats` that the REST route runs: reading
// them through `download` would count a view): read by those who may edit it, with mc_dm_download:read.
import { LIMITS } from '../../config.js';
import { builder } from '../../graphql/builder.js';
import { DownloadRef, readDownload } from '../downloads/index.js';
import { requireStatsReader, statsRange } from './rules.js';
import { type DailyStat, readDailyStats } from './store.js';

const READ = ['mc_dm_download:read'];

const DailyStatRef = builder.objectRef<DailyStat>('DailyStat').implement({
  description: 'Downloads and views of a download on one day (UTC).',
  fields: (t) => ({
    day: t.exposeString('day', { description: 'The day, YYYY-MM-DD (UTC).' }),
    downloads: t.exposeInt('downloads', {
      description: 'Times one of its files was downloaded that day (counted as downloadCount is).',
    }),
    views: t.exposeInt('views', {
      description:
        'Views counted that day (as viewCount is); views are added every 30 seconds, so today may lag that much.',
    }),
  }),
});

const RANGE = `\`to\` defaults to today, \`from\` to ${LIMITS.defaultStatsDays} days ending at \`to\`; at most ${LIMITS.maxStatsDays} days`;
const RANGE_ERRORS = `invalid_input (from or to not YYYY-MM-DD, from after to, more than ${LIMITS.maxStatsDays} days)`;

builder.prismaObjectFields(DownloadRef, (t) => ({
  stats: t.field({
    type: [DailyStatRef],
    description: `Downloads and views per day (UTC), oldest first, every day from \`from\` to \`to\` included (days without activity as zeros). ${RANGE}. Needs mc_dm_download:read and the right to edit the download (canEdit), else do_not_have_permission. Errors: ${RANGE_ERRORS}.`,
    authScopes: { scope: READ },
    args: {
      from: t.arg.string({ description: 'The first day, YYYY-MM-DD (UTC).' }),
      to: t.arg.string({ description: 'The last day, YYYY-MM-DD (UTC); today by default.' }),
    },
    resolve: async (d, args, ctx) => {
      await requireStatsReader(await ctx.access(), ctx.team, d);
      return readDailyStats(ctx.prisma, d.id, statsRange(args.from, args.to));
    },
  }),
}));

builder.queryFields((t) => ({
  downloadStats: t.field({
    type: [DailyStatRef],
    description: `A download's downloads and views per day (UTC), as Download.stats, without reading the download itself (so without counting a view). ${RANGE}. Needs mc_dm_download:read and the right to edit the download. Errors: mc_dm_api_error.download_not_found, do_not_have_permission, ${RANGE_ERRORS}.`,
    authScopes: { scope: READ },
    args: {
      downloadId: t.arg.int({ required: true, description: 'The numeric download id.' }),
      from: t.arg.string({ description: 'The first day, YYYY-MM-DD (UTC).' }),
      to: t.arg.string({ description: 'The last day, YYYY-MM-DD (UTC); today by default.' }),
    },
    resolve: async (_r, args, ctx) => {
      const access = await ctx.access();
      const d = await readDownload(ctx, access, args.downloadId);
      await requireStatsReader(access, ctx.team, d);
      return readDailyStats(ctx.prisma, d.id, statsRange(args.from, args.to));
    },
  }),
}));
