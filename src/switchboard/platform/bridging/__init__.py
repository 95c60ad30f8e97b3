"""The platform's client of the bridge protocol: dial, hang up, status, health, the rooms'
requests (docs/bridge.md). The calls and the rooms command a bridge through it, so it imports
none of the platform's features; what a bridge posts back, and the simulated bridge wired into
this process, are ``platform/callbacks``, above them. The bridge side, the protocol and the
simulator, is ``switchboard.bridge``."""
