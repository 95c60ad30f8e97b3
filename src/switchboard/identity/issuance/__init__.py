"""Issuing a staff credential to a signed-in user's wallet: an OpenID4VCI credential issuer."""
