// A subscription asked for as JSON. Yoga serves subscriptions as Server-Sent Events only, and would otherwise answer
// an empty 406: this answers a JSON error with the contract's code and the header to send instead.
import { isAsyncIterable, processRegularResult, type Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';

const JSON_TYPES = ['application/graphql-response+json', 'application/json'];

export function subscriptionTransportPlugin(): Plugin {
  return {
    onResultProcess({ request, result, resultProcessor, setResult, setResultProcessor }) {
      if (resultProcessor || !isAsyncIterable(result)) return;
      // The stream was never read: returning it releases whatever it holds.
      void (result as AsyncIterable<unknown>)[Symbol.asyncIterator]().return?.();
      setResult({
        errors: [
          new ApiError(
            'invalid_input',
            'Subscriptions are delivered as Server-Sent Events: send the header Accept: text/event-stream.',
            { field: 'accept' },
          ),
        ],
      });
      const accept = request.headers.get('accept') ?? '';
      setResultProcessor(processRegularResult, JSON_TYPES.find((t) => accept.includes(t)) ?? 'application/json');
    },
  };
}
