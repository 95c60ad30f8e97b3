"""The platform API: ``/api.ashx/v1``, the signaling handler ``/signal.ashx`` and the OpenAPI."""
