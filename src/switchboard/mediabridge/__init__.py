"""The media bridge: the program that carries calls (SIP and RTP to the trunks, an AI engine per
call) and speaks bridge protocol v1 to the platform. It imports nothing of the platform but
``switchboard.bridge.protocol``, so the two deploy and version apart (docs/bridge.md)."""
