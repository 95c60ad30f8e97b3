"""The Laundry API: a laundry fetches its confirmed jobs, reports counts, uploads invoices."""
