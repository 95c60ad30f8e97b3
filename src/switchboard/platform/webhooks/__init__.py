"""Webhook subscriptions and their durable, signed, at-least-once delivery (spec 2.10, 6.1).

``service`` holds the rules (subscriptions, fan-out, redelivery), ``repository`` all SQL,
``tasks`` the sender worker, ``destinations`` the SSRF guard and ``signing`` both signature
schemes; ``endpoints`` is the read-only REST view and ``cli`` the operator commands.
"""
