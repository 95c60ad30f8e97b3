from tests.calls.conftest import (  # noqa: F401 (fixtures)
    _close_bridge,
    client_with,
    org,
    other_org,
    settings,
)
from tests.calls.fakebridge import fake_bridge  # noqa: F401 (a fixture)
