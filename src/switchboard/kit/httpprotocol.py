"""The HTTP protocol ``switchboard serve`` runs: uvicorn's (httptools), answering the requests it
cannot read itself (a malformed request line or header, a URL past httptools' limits) as every
other error is answered: the API's error body (``{error, error_description}``) with
``Cache-Control: no-store``, not uvicorn's plain text. Such a request never reaches the
application, so no middleware of ours can answer it (decision 0014)."""

from __future__ import annotations

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

UNREADABLE = orjson.dumps(
    {"error": "invalid_request", "error_description": "the HTTP request could not be read"}
)


class JsonErrorsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        content = [b"HTTP/1.1 400 Bad Request\r\n"]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"cache-control: no-store\r\n",
                b"content-length: " + str(len(UNREADABLE)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                UNREADABLE,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()
