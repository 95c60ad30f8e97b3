"""The operator console (``/admin/``): server-rendered pages over the platform's services."""
