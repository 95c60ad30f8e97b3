"""Shared mechanics: errors, database session, wire casing, paging, clock, crypto."""
