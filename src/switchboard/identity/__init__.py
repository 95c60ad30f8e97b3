"""The OIDC identity provider shared by the platform API and the linen portal."""
