"""Linen sheets: the per-property, per-date order and delivery note, with its states."""
