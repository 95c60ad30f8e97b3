"""SIP for the media bridge: aiosipua parses and frames the messages; the transactions (RFC 3261
timers A/B/E/F, CANCEL, digest retry) and dialogs the bridge needs live here."""
