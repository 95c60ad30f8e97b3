"""Federation: signing in through a tenant's external OpenID Connect provider (a broker)."""
