"""The outbound number whitelist, served on the signaling handler ``/signal.ashx``."""
