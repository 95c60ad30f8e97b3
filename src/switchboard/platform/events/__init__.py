"""Platform events (spec 6.2): written in the transaction of the change that causes them."""
