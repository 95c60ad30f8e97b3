"""The TURN relay: coturn behind the guard that enforces the relay traffic defences (spec 8.2).

A program of its own: it imports the kit (clock, database) and nothing of the platform.
"""
