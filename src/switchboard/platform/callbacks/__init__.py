"""What a bridge posts back to the platform: the signed callback endpoints (call and room
events, the inbound-route question) and the inbound-route rules, with the simulated bridge wired
to them in this process and ``switchboard sim ...`` (docs/bridge.md).

They apply a bridge's news through the calls' and the rooms' services, so they sit above those,
which command the bridge through ``platform/bridging`` below them.
"""
