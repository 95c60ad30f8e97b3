"""Meeting rooms: WebSocket signaling, presence, the bandwidth detector and the mesh-to-SFU
cascade (spec 3.3, 6.2; docs/rooms.md)."""
