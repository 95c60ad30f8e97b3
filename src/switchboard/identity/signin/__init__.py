"""Browser sign-in: the authorization code flow with PKCE, the login page, the IdP session."""
