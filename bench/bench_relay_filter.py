"""UDP on the TURN port: the kernel packet filter (nftables sets) against a userspace proxy in
the guard, as measured for docs/decisions/0701-relay-packet-filter.md.

Needs root (a network namespace, a veth pair, one nftables table; all removed at the end).
A client host in its own namespace (203.0.113.0/30) sends STUN-sized UDP round trips to an echo
server, (a) straight through the nftables table holding a 1,000-network ACL, (b) through an
asyncio UDP proxy applying the same ACL per datagram. Then it floods 200,000 datagrams from a
blocked address and reads the CPU time the userspace proxy spent dropping them (the kernel
drop costs no process time).

The run checks what happened to the datagrams, and fails otherwise: every round trip answered
with its own datagram, through the proxy too (which relayed each one and dropped none); of the
flood at the proxy, nothing relayed or answered, and every datagram either dropped by its ACL or
lost in its socket buffer, none still queued when its CPU time is read; of the flood at the
kernel, nothing answered and nftables' drop counter, still zero after the round trips, equal to
the datagrams sent.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from typing import cast

from report import check, process_cpu

HERE = os.path.abspath(__file__)
ROUND_TRIPS = 5000
FLOOD = 200_000


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def client(mode: str, host: str, port: int) -> None:
    """Round trips (each datagram's transaction id names it, so only its own echo counts) or a
    flood followed by half a second of listening for answers that should not come."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        header = b"\x00\x01\x00\x00\x21\x12\xa4\x42"
        if mode == "rtt":
            sock.settimeout(1)
            times = []
            for n in range(ROUND_TRIPS):
                payload = header + n.to_bytes(4, "big") + os.urandom(8)
                start = time.perf_counter()
                sock.sendto(payload, (host, port))
                try:
                    data, peer = sock.recvfrom(2048)
                except TimeoutError:
                    break
                elapsed = time.perf_counter() - start
                if data != payload or peer != (host, port):
                    break
                times.append(elapsed)
            times.sort()
            if len(times) < ROUND_TRIPS:
                print(json.dumps({"echoed": len(times)}))
                return
            print(json.dumps({"p50_us": times[len(times) // 2] * 1e6,
                              "p99_us": times[int(len(times) * 0.99)] * 1e6,
                              "rps": ROUND_TRIPS / sum(times), "echoed": len(times)}))  # fmt: skip
        else:
            payload = header + os.urandom(12)
            for _ in range(FLOOD):
                sock.sendto(payload, (host, port))
            sock.settimeout(0.5)
            answers = 0
            while True:
                try:
                    sock.recvfrom(2048)
                except TimeoutError:
                    break
                answers += 1
            print(json.dumps({"sent": FLOOD, "answers": answers}))


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
            self.counts = {"dropped": 0, "relayed": 0, "returned": 0}

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.DatagramTransport, transport)

        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            ip = ipaddress.ip_address(addr[0])
            if any(ip in n for n in acl):
                self.counts["dropped"] += 1
                return
            flow = self.flows.get(addr)
            if flow is None:
                self.pending = asyncio.ensure_future(self.open(data, addr))
                return
            flow.sendto(data)
            self.counts["relayed"] += 1

        async def open(self, data: bytes, addr: tuple[str, int]) -> None:
            outer = self

            class Back(asyncio.DatagramProtocol):
                def datagram_received(self, data: bytes, _a: tuple[str, int]) -> None:
                    assert outer.transport is not None
                    outer.transport.sendto(data, addr)
                    outer.counts["returned"] += 1

            transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                Back, remote_addr=("127.0.0.1", upstream)
            )
            self.flows[addr] = transport
            transport.sendto(data)
            self.counts["relayed"] += 1

    async def main() -> None:
        loop = asyncio.get_running_loop()
        _, relay = await loop.create_datagram_endpoint(Relay, local_addr=(listen, port))
        loop.add_signal_handler(  # SIGUSR1: the counts so far, one JSON line
            signal.SIGUSR1, lambda: print(json.dumps(relay.counts), flush=True)
        )
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def run_client(ns: str, mode: str, host: str, port: int) -> dict[str, float]:
    command = ["ip", "netns", "exec", ns, sys.executable, HERE, "client", mode, host, str(port)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    check(
        done.returncode == 0, f"client {mode} {host}:{port} exited {done.returncode}: {done.stderr}"
    )
    result: dict[str, float] = json.loads(done.stdout)
    if mode == "rtt":
        echoed = result.pop("echoed")
        problem = "a reply missing, late or not the datagram sent"
        check(
            echoed == ROUND_TRIPS,
            f"{host}:{port}: {echoed:.0f} of {ROUND_TRIPS} round trips ({problem})",
        )
    else:
        check(result["sent"] == FLOOD, f"client flooded {result['sent']:.0f} of {FLOOD}")
    return result


def proxy_counts(proc: subprocess.Popen[bytes]) -> dict[str, int]:
    """The userspace proxy's datagrams dropped by its ACL, relayed upstream and returned."""
    assert proc.stdout is not None
    proc.send_signal(signal.SIGUSR1)
    line = proc.stdout.readline()
    check(bool(line), f"the proxy exited {proc.poll()} before reporting its counts")
    counts: dict[str, int] = json.loads(line)
    return counts


def udp_socket(pid: int, host: str, port: int) -> tuple[int, int]:
    """(bytes queued, datagrams dropped) of the UDP socket bound to ``host:port``, as the kernel
    of ``pid``'s network namespace counts them."""
    local = f"{int.from_bytes(socket.inet_aton(host), sys.byteorder):08X}:{port:04X}"
    with open(f"/proc/{pid}/net/udp") as handle:
        found = [row for row in map(str.split, handle.read().splitlines()[1:]) if row[1] == local]
    check(len(found) == 1, f"{len(found)} UDP sockets bound to {host}:{port}")
    return int(found[0][4].split(":")[1], 16), int(found[0][-1])


def nft_dropped(table: str) -> int:
    out = subprocess.run(["nft", "list", "counter", "inet", table, "dropped"],
                         capture_output=True, text=True).stdout  # fmt: skip
    check("packets" in out, f"nftables counter {table} dropped unreadable: {out!r}")
    return int(out.split("packets")[1].split()[0])


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
                counts = proxy_counts(p)
                expected = {"dropped": 0, "relayed": ROUND_TRIPS, "returned": ROUND_TRIPS}
                check(counts == expected, f"the proxy counted {counts}, not {expected}")
                p.kill()
                p.wait()
            else:
                _, lost_before = udp_socket(p.pid, gw, proxy_port)
                before = process_cpu(p.pid)
                answers = run_client(ns, "flood", gw, proxy_port)["answers"]
                time.sleep(1)
                spent = process_cpu(p.pid) - before
                queued, lost = udp_socket(p.pid, gw, proxy_port)
                counts, lost = proxy_counts(p), lost - lost_before
                check(queued == 0, f"{queued} bytes of the flood still queued at the proxy")
                check(answers == 0, f"{answers:.0f} blocked datagrams answered through the proxy")
                check(counts["relayed"] == counts["returned"] == 0, f"the proxy relayed {counts}")
                fate = f"its ACL dropped {counts['dropped']}, its socket buffer {lost}"
                check(counts["dropped"] + lost == FLOOD, f"of {FLOOD} blocked datagrams {fate}")
                print(f"userspace proxy: {FLOOD:,} blocked datagrams cost {spent:.2f} s of CPU "
                      f"({counts['dropped']:,} reached its ACL, {lost:,} overflowed its socket "
                      "buffer)")  # fmt: skip
        check(nft_dropped(table) == 0, "nftables dropped datagrams of an allowed address")
        subprocess.run(["nft", "add", "element", "inet", table, "acl4", "{ 203.0.113.0/30 }"],
                       check=True)  # fmt: skip
        echo_cpu = process_cpu(procs[0].pid)
        answers = run_client(ns, "flood", gw, echo_port)["answers"]
        dropped = nft_dropped(table)
        check(answers == 0, f"{answers:.0f} blocked datagrams answered through nftables")
        check(dropped == FLOOD, f"nftables dropped {dropped} of {FLOOD} blocked datagrams")
        spent = process_cpu(procs[0].pid) - echo_cpu
        print(f"nftables: {FLOOD:,} blocked datagrams cost the server {spent:.2f} s of CPU; "
              f"dropped by the kernel: {dropped}")  # fmt: skip
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
