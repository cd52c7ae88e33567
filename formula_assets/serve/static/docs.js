// The OpenAPI page: Swagger UI (vendored) over this service's own schema.
window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
