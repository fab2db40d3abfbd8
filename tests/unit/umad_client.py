"""A libibumad client (ctypes) the umad shim tests run under LD_PRELOAD against a real ibsim.

``silent OUT``: on the preloaded SIM_HOST, receive SMPs and answer none, counting them in OUT.
``sminfo|nodeinfo PATH TIMEOUT_MS RETRIES WAIT_MS``: send one directed-route SMP Get along PATH
with umad_send's timeout and retries, then print every reply received within WAIT_MS of the
last, as JSON. ``hold``: attach to ibsim, print "ready" and sleep (holds a client slot).
``sminfo|nodeinfo`` with a sixth argument ``reader``: a thread already waits in umad_recv when the
send is written (the reply can be read before umad_send returns).
``flood PATH INTERVAL_MS``: send a directed-route SMInfo Get along PATH every INTERVAL_MS, no
timeout, replies unread, until stdin closes (as a MASTER polling an SM-class port, only faster).
"""

import ctypes
import json
import select
import struct
import sys
import threading
import time

UMAD_HDR = 64
SMP_DR = 0x81
ATTR_SMINFO, ATTR_NODEINFO = 0x0020, 0x0011


def smp_dr_get(attr: int, path: list[int], tid: int) -> bytes:
    """A directed-route SMP Get (MAD 256 bytes)."""
    mad = bytearray(256)
    mad[0:4] = bytes([1, SMP_DR, 1, 0x01])
    mad[6], mad[7] = 0, len(path) - 1  # hop pointer, hop count
    mad[8:16] = struct.pack(">Q", tid)
    mad[16:18] = struct.pack(">H", attr)
    mad[32:36] = b"\xff\xff\xff\xff"  # DrSLID, DrDLID permissive
    for i, hop in enumerate(path):
        mad[128 + i] = hop
    return bytes(mad)


def main() -> None:
    mode = sys.argv[1]
    um = ctypes.CDLL("libibumad.so.3")
    assert um.umad_init() == 0
    port = um.umad_open_port(None, 0)
    assert port >= 0, port
    if mode == "hold":
        print("ready", flush=True)
        sys.stdin.read()
        return
    agent = um.umad_register(port, SMP_DR, 1, 0, None)
    assert agent >= 0, agent
    buf = ctypes.create_string_buffer(UMAD_HDR + 256)
    length = ctypes.c_int(256)
    if mode == "flood":
        path, interval = [int(p) for p in sys.argv[2].split(",")], int(sys.argv[3]) / 1000
        ctypes.memmove(ctypes.addressof(buf) + 28, b"\xff\xff", 2)  # addr.lid: permissive
        print("ready", flush=True)
        tid = 0x10000
        while not select.select([sys.stdin], [], [], interval)[0]:
            tid += 1
            ctypes.memmove(
                ctypes.addressof(buf) + UMAD_HDR, smp_dr_get(ATTR_SMINFO, path, tid), 256
            )
            assert um.umad_send(port, agent, buf, 256, 0, 0) == 0
        return
    if mode == "silent":  # receive requests, answer none, count them in a file
        out, count = sys.argv[2], 0
        print("ready", flush=True)
        while not select.select([sys.stdin], [], [], 0)[0]:  # until stdin closes
            length.value = 256
            if um.umad_recv(port, buf, ctypes.byref(length), 200) >= 0:
                count += 1
                with open(out, "w") as fh:
                    fh.write(str(count))
        return
    attr, path, timeout_ms, retries, wait_ms = (
        {"sminfo": ATTR_SMINFO, "nodeinfo": ATTR_NODEINFO}[mode],
        [int(p) for p in sys.argv[2].split(",")],
        int(sys.argv[3]),
        int(sys.argv[4]),
        int(sys.argv[5]),
    )
    tid = 0x5A5A1234
    ctypes.memmove(ctypes.addressof(buf) + UMAD_HDR, smp_dr_get(attr, path, tid), 256)
    ctypes.memmove(ctypes.addressof(buf) + 28, b"\xff\xff", 2)  # addr.lid: permissive
    replies: list[dict] = []
    ended: list[int] = []

    def receive() -> None:
        rbuf = ctypes.create_string_buffer(UMAD_HDR + 256)
        rlen = ctypes.c_int(256)
        while True:
            rlen.value = 256
            got = um.umad_recv(port, rbuf, ctypes.byref(rlen), wait_ms)
            if got < 0:
                ended.append(got)
                return
            raw = rbuf.raw
            mad = raw[UMAD_HDR:]
            replies.append(
                {
                    "agent": got,
                    "status": struct.unpack("=I", raw[4:8])[0],
                    "method": mad[3],
                    "tid_low": struct.unpack(">I", mad[12:16])[0],
                    "length": rlen.value,
                    "after_ms": round((time.monotonic() - start) * 1000),
                }
            )

    reader = threading.Thread(target=receive)
    threaded = len(sys.argv) > 6 and sys.argv[6] == "reader"
    start = time.monotonic()
    if threaded:  # the reader waits in umad_recv before the send is written
        reader.start()
        time.sleep(0.2)
        start = time.monotonic()
    assert um.umad_send(port, agent, buf, 256, timeout_ms, retries) == 0
    if not threaded:
        reader.start()
    reader.join()
    got = ended[0]
    print(json.dumps({"tid_low": tid, "replies": replies, "recv_end": got}), flush=True)


if __name__ == "__main__":
    main()
