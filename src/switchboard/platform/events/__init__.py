"""Platform events (spec 6.2): their names (``catalogue``), each one's payload as a model
(``payloads``), the outbox row (``models``) and its reads (``repository``). An event is written
in the transaction of the change that causes it by ``webhooks.outbox.emit``, its payload checked
first, together with its deliveries; this package imports no other feature."""
