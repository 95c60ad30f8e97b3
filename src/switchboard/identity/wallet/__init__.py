"""Signing in with the EU Digital Identity Wallet: an OpenID4VP verifier of SD-JWT VCs (PIDs of
trusted issuers, and the tenant's own staff credentials)."""
