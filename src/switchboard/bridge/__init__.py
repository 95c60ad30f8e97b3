"""The bridge side: the versioned bridge protocol, shared with the media bridge, and a simulated
bridge that speaks it. It imports nothing of the platform; the platform's side of the protocol
is its client, ``switchboard.platform.bridging``, and the callback endpoints with the simulator
wired into a process, ``switchboard.platform.callbacks``."""
