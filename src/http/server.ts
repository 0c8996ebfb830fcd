// The HTTP edge: one Yoga instance serves /graphql (with GraphiQL), /api/* (the REST adapter plugin),
// /healthz and /readyz.
import http from 'node:http';
import { createYoga } from 'graphql-yoga';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import type { Logger } from '../log.js';
import type { Services } from '../schema/context.js';
import { createContext } from '../schema/context.js';
import { visitorFromHeaders } from '../auth/visitor.js';
import { restAdapter } from '../../rest-adapter/plugin.js';
import { routes } from '../../rest-adapter/routes.js';
import { bodyLimitPlugin, contractCodesPlugin, healthPlugin, requestLogPlugin } from './plugins.js';
import { graphqlUploadPlugin, uploadReceiver } from './uploads.js';
import { fileDataPlugin } from './file-data.js';
import { subscriptionTransportPlugin } from './subscriptions.js';

const SERVER_ERROR = 'An unexpected error occurred. It has been logged.';

const DEFAULT_QUERY = `# Set your key in the Headers tab: { "Forum-Api-Key": "dm_…" }
query Start {
  viewer { userId username isSuperKey scopes }
  categories(perPage: 10) {
    nodes { categoryId parentCategoryId title downloadCount }
    pagination { page perPage total lastPage }
  }
}
`;

export interface HttpOptions {
  schema: GraphQLSchema;
  services: Services;
  ping(): Promise<void>;
  log: Logger;
}

export function createHttpServer({ schema, services, ping, log }: HttpOptions): http.Server {
  const contextFor = async (request: Request) =>
    createContext(services, await visitorFromHeaders(services.prisma, request.headers, services.groups, services.auth));

  const onUnexpectedError = (err: unknown) => log.error({ err }, 'unexpected error');
  const yoga = createYoga({
    schema,
    // Multipart bodies are streamed by graphqlUploadPlugin (MAX_UPLOAD_BYTES enforced while streaming); other
    // bodies are limited to MAX_BODY_BYTES by bodyLimitPlugin, since Yoga's own limit would cover uploads too.
    multipart: false,
    maxRequestBodySize: false,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // GraphiQL with its assets bundled: it works on machines without internet access.
    renderGraphiQL,
    logging: {
      debug: (...a) => log.debug({ yoga: a }),
      info: (...a) => log.info({ yoga: a }),
      warn: (...a) => log.warn({ yoga: a }),
      error: (...a) => log.error({ yoga: a }),
    },
    graphiql: {
      title: 'Downloads Catalogue Service',
      headers: JSON.stringify({ 'Forum-Api-Key': '' }, null, 2),
      defaultQuery: DEFAULT_QUERY,
    },
    context: ({ request }) => contextFor(request),
    maskedErrors: {
      maskError(error) {
        if (error instanceof GraphQLError) {
          const original = error.originalError;
          if (!original || original instanceof GraphQLError) {
            return error; // contract errors, and bad input (coded by contractCodesPlugin)
          }
          log.error({ err: original, path: error.path }, 'unexpected error');
          return new GraphQLError(SERVER_ERROR, { nodes: error.nodes, path: error.path, extensions: { code: 'server_error' } });
        }
        log.error({ err: error }, 'unexpected error');
        return new GraphQLError(SERVER_ERROR, { extensions: { code: 'server_error', http: { status: 500 } } });
      },
    },
    plugins: [
      requestLogPlugin(log),
      healthPlugin(ping),
      contractCodesPlugin(),
      subscriptionTransportPlugin(),
      graphqlUploadPlugin(services.config.maxUploadBytes),
      bodyLimitPlugin(services.config.maxBodyBytes),
      fileDataPlugin(contextFor, onUnexpectedError),
      restAdapter({
        schema, routes, contextFor,
        maxBodyBytes: services.config.maxBodyBytes,
        receiveUpload: uploadReceiver(services.storage, services.config.maxUploadBytes),
        onUnexpectedError,
      }),
    ],
  });

  return http.createServer(yoga);
}
