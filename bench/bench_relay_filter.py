"""UDP on the TURN port: the kernel packet filter (nftables sets) against a userspace proxy in
the guard, as measured for docs/decisions/0701-relay-packet-filter.md.

Needs root (a network namespace, a veth pair, one nftables table; all removed at the end).
A client host in its own namespace (203.0.113.0/30) sends STUN-sized UDP round trips to an echo
server, (a) straight through the nftables table holding a 1,000-network ACL, (b) through an
asyncio UDP proxy applying the same ACL per datagram. Then it floods 200,000 datagrams from a
blocked address and reads the CPU time the userspace proxy spent dropping them (the kernel
drop costs no process time).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from typing import cast

HERE = os.path.abspath(__file__)
ROUND_TRIPS = 5000
FLOOD = 200_000


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def client(mode: str, host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        payload = b"\x00\x01\x00\x00\x21\x12\xa4\x42" + os.urandom(12)
        if mode == "rtt":
            sock.settimeout(1)
            times = []
            for _ in range(ROUND_TRIPS):
                start = time.perf_counter()
                sock.sendto(payload, (host, port))
                sock.recvfrom(2048)
                times.append(time.perf_counter() - start)
            times.sort()
            print(json.dumps({"p50_us": times[len(times) // 2] * 1e6,
                              "p99_us": times[int(len(times) * 0.99)] * 1e6,
                              "rps": ROUND_TRIPS / sum(times)}))  # fmt: skip
        else:
            for _ in range(FLOOD):
                sock.sendto(payload, (host, port))
            print(json.dumps({"sent": FLOOD}))


def echo(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("0.0.0.0", port))
        while True:
            data, peer = sock.recvfrom(2048)
            sock.sendto(data, peer)


def proxy(listen: str, port: int, upstream: int) -> None:
    networks = [ipaddress.ip_network(f"198.18.{n // 256}.{n % 256}/32") for n in range(1000)]
    blocked = [ipaddress.ip_network("203.0.113.0/30")] if os.environ.get("BLOCK") else []
    acl = networks + blocked

    class Relay(asyncio.DatagramProtocol):
        def __init__(self) -> None:
            self.flows: dict[tuple[str, int], asyncio.DatagramTransport] = {}
            self.transport: asyncio.DatagramTransport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.DatagramTransport, transport)

        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            ip = ipaddress.ip_address(addr[0])
            if any(ip in n for n in acl):
                return
            flow = self.flows.get(addr)
            if flow is None:
                self.pending = asyncio.ensure_future(self.open(data, addr))
                return
            flow.sendto(data)

        async def open(self, data: bytes, addr: tuple[str, int]) -> None:
            outer = self

            class Back(asyncio.DatagramProtocol):
                def datagram_received(self, data: bytes, _a: tuple[str, int]) -> None:
                    assert outer.transport is not None
                    outer.transport.sendto(data, addr)

            transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                Back, remote_addr=("127.0.0.1", upstream)
            )
            self.flows[addr] = transport
            transport.sendto(data)

    async def main() -> None:
        await asyncio.get_running_loop().create_datagram_endpoint(Relay, local_addr=(listen, port))
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_client(ns: str, mode: str, host: str, port: int) -> dict[str, float]:
    command = ["ip", "netns", "exec", ns, sys.executable, HERE, "client", mode, host, str(port)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out)
    return result


def bench() -> None:
    tag = uuid.uuid4().hex[:6]
    ns, outer, inner, table = f"sbb-{tag}", f"sbb{tag}a", f"sbb{tag}b", f"sbb_{tag}"
    gw, addr = "203.0.113.1", "203.0.113.2"
    echo_port, proxy_port = 27401, 27402
    procs: list[subprocess.Popen[bytes]] = []
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        sh("ip", "addr", "add", f"{gw}/30", "dev", outer)
        sh("ip", "link", "set", outer, "up")
        sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", inner)
        sh("ip", "-n", ns, "link", "set", inner, "up")
        procs.append(subprocess.Popen([sys.executable, HERE, "echo", str(echo_port)]))
        elements = ", ".join(f"198.18.{n // 256}.{n % 256}" for n in range(1000))
        rules = f"""table inet {table} {{
  set acl4 {{ type ipv4_addr; flags interval; elements = {{ {elements} }} }}
  counter dropped {{}}
  chain input {{
    type filter hook input priority filter - 5; policy accept;
    udp dport {echo_port} ip saddr @acl4 counter name dropped drop
  }}
}}"""
        subprocess.run(["nft", "-f", "-"], input=rules.encode(), check=True)
        time.sleep(0.3)
        print("nftables, 1,000-network ACL:", run_client(ns, "rtt", gw, echo_port))
        for block in ("", "1"):
            env = {**os.environ, "BLOCK": block}
            p = subprocess.Popen([sys.executable, HERE, "proxy", gw, str(proxy_port),
                                  str(echo_port)], env=env, stdout=subprocess.PIPE)  # fmt: skip
            procs.append(p)
            assert p.stdout is not None
            p.stdout.readline()
            if not block:
                print("userspace proxy, same ACL:  ", run_client(ns, "rtt", gw, proxy_port))
                p.kill()
                p.wait()
            else:
                before = cpu(p.pid)
                run_client(ns, "flood", gw, proxy_port)
                time.sleep(1)
                print(f"userspace proxy: {FLOOD:,} blocked datagrams cost "
                      f"{cpu(p.pid) - before:.2f} s of CPU")  # fmt: skip
        subprocess.run(["nft", "add", "element", "inet", table, "acl4", "{ 203.0.113.0/30 }"],
                       check=True)  # fmt: skip
        echo_cpu = cpu(procs[0].pid)
        run_client(ns, "flood", gw, echo_port)
        out = subprocess.run(["nft", "list", "counter", "inet", table, "dropped"],
                             capture_output=True, text=True).stdout  # fmt: skip
        print(f"nftables: {FLOOD:,} blocked datagrams cost the server "
              f"{cpu(procs[0].pid) - echo_cpu:.2f} s of CPU; dropped by the kernel:",
              out.split("packets")[1].split()[0])  # fmt: skip
    finally:
        for p in procs:
            p.kill()
        subprocess.run(["nft", "delete", "table", "inet", table], capture_output=True)
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "echo":
        echo(int(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "proxy":
        proxy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif os.geteuid() != 0:
        print("skipped: needs root (network namespaces and nftables)")
    else:
        bench()
