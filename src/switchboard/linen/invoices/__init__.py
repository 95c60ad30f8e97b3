"""Laundry invoices: PDF plus lines referring to linen sheets, and their approval states."""
