from tests.calls.conftest import (  # noqa: F401 (fixtures)
    _close_bridge,
    client_with,
    fake_bridge,
    org,
    other_org,
    settings,
)
