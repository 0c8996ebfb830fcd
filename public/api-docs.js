// Renders the REST API reference from /api/openapi.json with Swagger UI (served from this service: works offline).
// "Try it out" sends requests from this page, to this origin, with the key entered under "Authorize".
window.SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
  validatorUrl: null,
  // Keys entered under "Authorize" stay in this page's memory only.
  persistAuthorization: false,
});
