// Mutation payload objects: `{ <key>: <Type> }`, named after what the mutation returns (contract §7).
import { builder } from './builder.js';

export function payloadOf<T>(name: string, key: string, type: any, description?: string) {
  return builder.objectRef<Record<string, T>>(name).implement({
    description,
    fields: (t) => ({ [key]: t.field({ type, resolve: (p: Record<string, T>) => p[key] as any }) }),
  });
}

export const SuccessPayload = builder.objectRef<{ success: boolean }>('SuccessPayload').implement({
  fields: (t) => ({ success: t.exposeBoolean('success') }),
});

export const OkPayload = builder.objectRef<{ ok: boolean }>('OkPayload').implement({
  fields: (t) => ({ ok: t.exposeBoolean('ok') }),
});
