"""The bridge side: the versioned bridge protocol, shared with the media bridge, and a simulated
bridge that speaks it. It imports nothing of the platform; the platform's side of the protocol
(its client, the callback endpoints, the simulator wired into a process) is
``switchboard.platform.bridging``."""
