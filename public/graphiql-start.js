// Starts GraphiQL with the API key asked for in the bar above it.
// - The key is kept in sessionStorage (this tab only); GraphiQL's own state (tabs, queries, theme) is kept there
//   too, and headers are never persisted: nothing lands in localStorage.
// - Every request GraphiQL sends to /graphql carries the key, unless the Headers tab sets Forum-Api-Key itself
//   (that key then becomes the tab's key).
// - When the key changes, the schema is fetched again, so the Docs pane and autocomplete follow the key's scopes.
(function () {
  'use strict';
  var KEY = 'dcs.forumApiKey';
  var options = JSON.parse(document.getElementById('graphiql-options').textContent);
  var endpoint = new URL(options.endpoint || '/graphql', location.href).href;
  var input = document.getElementById('api-key');
  var help = document.getElementById('key-help');

  function storedKey() { try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  function say(text, isError) { help.textContent = text; help.className = isError ? 'error' : ''; }
  function showState() {
    var key = storedKey();
    input.value = key;
    input.classList.toggle('missing', !key);
  }

  function refetchSchema() {
    var button = document.querySelector('[aria-label^="Re-fetch GraphQL schema"]');
    if (button) button.click();
  }

  function useKey(key) {
    key = (key || '').trim();
    var changed = key !== storedKey();
    try {
      if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
    } catch (e) { /* storage disabled: the key lives in the field only */ }
    showState();
    // The status says what the tab holds now (a request answered later may refine it).
    if (key) say('Using the key from this tab. Schema, Docs and autocomplete follow its scopes.', false);
    else say('No key: paste one to load the schema. It is kept for this tab only.', false);
    if (changed) refetchSchema();
  }

  // The key goes on every request to the GraphQL endpoint; a key typed into the Headers tab wins and is remembered.
  var nativeFetch = window.fetch.bind(window);
  window.fetch = function (resource, init) {
    var url = typeof resource === 'string' ? resource : resource instanceof URL ? resource.href : resource.url;
    if (new URL(url, location.href).href.split('?')[0] !== endpoint) return nativeFetch(resource, init);
    init = Object.assign({}, init);
    var headers = new Headers(init.headers || (resource instanceof Request ? resource.headers : undefined));
    var sent = (headers.get('forum-api-key') || '').trim();
    if (sent) {
      if (sent !== storedKey()) setTimeout(function () { useKey(sent); }, 0);
    } else if (storedKey()) {
      headers.set('Forum-Api-Key', storedKey());
    } else if (typeof init.body === 'string' && init.body.indexOf('IntrospectionQuery') !== -1) {
      // No key yet: the schema cannot load. Say what to do instead of sending a request bound to answer 401.
      return Promise.resolve(new Response(JSON.stringify({ errors: [{ message: 'Paste your API key in the bar above to load the schema.', extensions: { code: 'no_api_key_in_request' } }] }), {
        status: 200, headers: { 'content-type': 'application/json' },
      }));
    }
    init.headers = headers;
    var keySent = !!headers.get('forum-api-key');
    return nativeFetch(resource, init).then(function (response) {
      // The status speaks of the key this request carried: none (after Forget, say) is not a refused key.
      if (response.status === 401 && keySent) say('The service did not accept this key (401): check it, or ask the operator for one.', true);
      else if (response.status === 401) say('No key: paste one to load the schema and run queries. It is kept for this tab only.', true);
      else if (storedKey()) say('Using the key from this tab. Schema, Docs and autocomplete follow its scopes.', false);
      return response;
    });
  };

  document.getElementById('key-bar').addEventListener('submit', function (event) {
    event.preventDefault();
    useKey(input.value);
  });
  document.getElementById('forget-key').addEventListener('click', function () { useKey(''); });
  showState();
  if (!storedKey()) { say('Paste your key to load the schema. It is kept for this tab only.', false); input.focus(); }

  // Monaco's workers, served as files from this service, by the versioned address GraphiQL's own script has (the
  // browser keeps them for a year; a new GraphiQL changes the address).
  var bundle = document.querySelector('script[src^="/graphiql/graphiql.js"]');
  var version = bundle ? new URL(bundle.src).searchParams.get('v') : null;
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: function (_moduleId, label) {
      var name = { editorWorkerService: 'editor', json: 'json', graphql: 'graphql' }[label] || 'editor';
      return '/graphiql/worker-' + name + '.js' + (version ? '?v=' + encodeURIComponent(version) : '');
    },
  };
  var storage = window.sessionStorage;
  YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), Object.assign({}, options, {
    storage: storage,
    shouldPersistHeaders: false,
  }));
})();
