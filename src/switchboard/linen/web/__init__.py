"""The linen portal's web app (``/app/``): server-rendered pages over the Data API's services."""
