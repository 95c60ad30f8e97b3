"""Who is asking: the identity records (users, OIDC clients, API keys, refresh tokens, browser
sessions, signing keys), the keyring, the token issuer, password hashing, and the bearer
authentication every application runs (the provider's own tokens, API keys, a tenant's external
issuers). The runtime builds its process-wide objects from these; the identity provider
(``switchboard.identity``) is built on them."""
