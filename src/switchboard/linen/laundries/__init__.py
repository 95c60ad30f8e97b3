"""Laundries, their price lists and the API keys of the Laundry API."""
