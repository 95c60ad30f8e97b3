"""The linen portal: Data API (``/api/v1``) and Laundry API (``/api/laundry``)."""
