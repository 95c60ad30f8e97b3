"""The platform's side of the bridge protocol: the client that commands a bridge, the callback
endpoints a bridge posts to and their rules, and the simulated bridge wired into this process
(docs/bridge.md). The bridge side, the protocol and the simulator, is ``switchboard.bridge``."""
