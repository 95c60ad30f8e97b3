"""What the server-rendered web apps (the operator console, the linen web app) share: sealed
cookies and the record of signed-out sessions, the OIDC relying party, the sign-in routes, the
CSRF check, security headers and hashed static URLs. Each app passes its own mount path, client
id and role rule."""
