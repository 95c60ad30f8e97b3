"""Meeting rooms on the bridge: Janus's VideoRoom plugin as the SFU behind a room
(docs/bridge.md, "Rooms")."""
