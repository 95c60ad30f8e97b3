"""Outbound AI calls (spec 2.2-2.4, 3.1, 4.2): records, the status machine, the dispatcher."""
