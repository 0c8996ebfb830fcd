// What the REST upload route decides before a byte of the file is stored, from the fields sent before it:
// `version_id` names a version the key may add files to, with room for one more file. The mutation checks the
// same again when it runs; this only stops a refused upload from being written first.
import type { Context } from '../graphql/context.js';
import { deps } from '../modules/files/index.js';
import { checkUploadTarget } from '../modules/files/index.js';
import { invalidInput } from '../errors.js';
import { MAX_INT, wholeNumberRange } from '../input/numbers.js';
import type { RawFields } from '../../rest-adapter/inputs.js';

export async function uploadPrecheck(context: unknown, fields: RawFields): Promise<void> {
  const ctx = context as Context;
  const raw = fields.get('version_id');
  const text = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim() : '';
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_INT) {
    throw invalidInput('version_id', `version_id must be ${wholeNumberRange(1)}, got "${String(raw).slice(0, 40)}".`);
  }
  await checkUploadTarget(deps(ctx, await ctx.access()), Number(text));
}
