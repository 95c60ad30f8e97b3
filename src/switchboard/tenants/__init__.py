"""Tenants: a name, the domains (Host values) that map to it, and its settings."""
