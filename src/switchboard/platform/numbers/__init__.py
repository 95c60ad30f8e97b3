"""Virtual numbers (spec 2.5, 4.3): inbound numbers answered by a live AI voice agent."""
