"""switchboard: AI phone calls, an OIDC identity provider and the linen portal, self-hosted."""

__version__ = "0.1.0"
