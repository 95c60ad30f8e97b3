"""The transcript and outcome email sent after every attempt of an outbound call (spec 2.2)."""
