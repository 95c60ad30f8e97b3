"""The webhook sender: claims due deliveries with a lease, POSTs them, records the outcomes.

One ``Sender`` per process (``_sender``) holds one ``Poster`` (``_post``: signing and the
request, through ``kit.posting``) and writes finished attempts back as ``Writes``
(``_outcomes``: what a batch of outcomes changes). It claims only as many deliveries as it has
free slots (``MAX_IN_FLIGHT``) and at most ``PER_SUBSCRIPTION`` at a time for one
subscription, so a slow receiver occupies a few slots and never the whole sender. While running
it leases ahead of the sends (at most ``MAX_LEASED`` deliveries), so a finished send starts the
next one at once. Outcomes are written back in batches, one transaction per batch.
"""

from switchboard.platform.webhooks.tasks._post import USER_AGENT
from switchboard.platform.webhooks.tasks._sender import (
    MAX_IN_FLIGHT,
    MAX_LEASED,
    PER_SUBSCRIPTION,
    Sender,
    deliver_due,
    sender,
)

__all__ = [
    "MAX_IN_FLIGHT",
    "MAX_LEASED",
    "PER_SUBSCRIPTION",
    "USER_AGENT",
    "Sender",
    "deliver_due",
    "sender",
]
