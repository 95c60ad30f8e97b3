"""Signing in with the EU Digital Identity Wallet: an OpenID4VP verifier for PID SD-JWT VCs."""
