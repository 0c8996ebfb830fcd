// An operation's abort signal (src/db/operation-signal.ts) behaves as an AbortSignal does for the code that listens to
// it: each listener once, in order; one added twice called once; one removed or added after the abort never called;
// the first reason wins; a listener that throws does not keep the others from hearing it. Checked against Node's own
// AbortController, case by case, and with the interpreting executor, which listens to the signal it is given.
import { normalizedExecutor } from '@graphql-tools/executor';
import { buildSchema, parse } from 'graphql';
import { describe, expect, it, vi } from 'vitest';
import { OperationAbort } from '../src/db/operation-signal.js';

/** The same script run on a real AbortController and on an OperationAbort: what each listener heard, in order. */
function heard(make: () => { signal: { addEventListener: any; removeEventListener: any }; abort(r: unknown): void }) {
  const log: string[] = [];
  const c = make();
  const a = () => log.push('a');
  const b = () => log.push('b');
  const gone = () => log.push('removed');
  c.signal.addEventListener('abort', a);
  c.signal.addEventListener('abort', b, { once: true });
  c.signal.addEventListener('abort', a); // the same listener again: heard once
  c.signal.addEventListener('abort', gone);
  c.signal.removeEventListener('abort', gone);
  c.abort('first');
  c.abort('second');
  c.signal.addEventListener('abort', () => log.push('late'));
  return log;
}

describe('OperationAbort', () => {
  it('calls its listeners as an AbortSignal does', () => {
    const real = heard(() => new AbortController());
    expect(real).toEqual(['a', 'b']);
    expect(heard(() => wrap(new OperationAbort()))).toEqual(real);
  });

  it('keeps the first reason and throws it from throwIfAborted', () => {
    const s = new OperationAbort();
    expect(() => s.throwIfAborted()).not.toThrow();
    expect(s.aborted).toBe(false);
    s.abort(new Error('deadline'));
    s.abort(new Error('later'));
    expect(s.aborted).toBe(true);
    expect(() => s.throwIfAborted()).toThrow('deadline');
  });

  it('gives each listener an abort event; one that throws does not stop the others, and its error is thrown on its own', () => {
    const rethrown: (() => void)[] = [];
    vi.stubGlobal('queueMicrotask', (fn: () => void) => rethrown.push(fn));
    try {
      const s = new OperationAbort();
      const types: string[] = [];
      s.addEventListener('abort', () => {
        throw new Error('listener failed');
      });
      s.addEventListener('abort', (e) => types.push(e.type));
      s.abort('stop');
      expect(types).toEqual(['abort']);
      expect(rethrown).toHaveLength(1);
      expect(() => rethrown[0]!()).toThrow('listener failed');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('stops the interpreting executor, which listens to it, with its reason', async () => {
    let release = () => {};
    const schema = buildSchema('type Query { slow: Int }');
    const rootValue = { slow: () => new Promise<number>((r) => (release = () => r(1))) };
    const s = new OperationAbort();
    const run = Promise.resolve(
      normalizedExecutor({ schema, rootValue, document: parse('{ slow }'), signal: s as unknown as AbortSignal }),
    );
    s.abort(new Error('operation_timeout'));
    await expect(run).rejects.toThrow('operation_timeout');
    release();
  });
});

/** An OperationAbort in the shape of an AbortController (its signal is itself). */
function wrap(s: OperationAbort) {
  return { signal: s, abort: (r: unknown) => s.abort(r) };
}
