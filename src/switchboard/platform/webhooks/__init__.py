"""Webhook subscriptions and their durable, signed, at-least-once delivery (spec 2.10, 6.1).

``outbox`` emits an event (its row and its deliveries, in the caller's transaction),
``service`` holds the rules (subscriptions, fan-out, redelivery), ``repository`` the
tenant-scoped reads, ``queue`` the sender's statements across tenants (claims, leases,
outcomes), ``tasks`` the sender worker and ``signing`` both signature schemes; ``endpoints``
is the read-only REST view, ``cli`` the operator commands and ``openapi`` the events' entries
in the OpenAPI description (its ``webhooks`` section). The SSRF guard is
``kit.destinations``.
"""
