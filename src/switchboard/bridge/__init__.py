"""The media-bridge side: the versioned bridge protocol, its HTTP client, the callback
endpoints the bridge posts to, and a simulated bridge that speaks the same protocol."""
