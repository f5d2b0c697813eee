"""Spin the CPU or grow memory until a limit stops it, or until --seconds pass (stdlib only)."""

import argparse
import sys
import time

CHUNK_MIB = 20
PAGE = 4096


def spin(deadline: float) -> None:
    count = 0
    next_report = time.monotonic() + 1
    while (now := time.monotonic()) < deadline:
        count += 1
        if now >= next_report:
            print(f"cpu: {count:,} iterations", flush=True)
            next_report = now + 1


def grow(deadline: float, max_mib: int) -> None:
    held: list[bytearray] = []
    next_report = time.monotonic() + 1
    while (now := time.monotonic()) < deadline:
        if len(held) * CHUNK_MIB < max_mib:
            chunk = bytearray(CHUNK_MIB * 1024 * 1024)
            chunk[::PAGE] = b"\1" * len(chunk[::PAGE])  # touch every page so it is resident
            held.append(chunk)
        if now >= next_report:
            print(f"memory: holding {len(held) * CHUNK_MIB:,} MiB", flush=True)
            next_report = now + 1
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["cpu", "memory"])
    parser.add_argument("--seconds", type=float, default=120.0, help="give up after this long")
    parser.add_argument("--max-mib", type=int, default=2048, help="stop growing at this size")
    args = parser.parse_args()
    deadline = time.monotonic() + args.seconds
    print(f"runaway {args.mode}: stopping by itself after {args.seconds:g} s", flush=True)
    if args.mode == "cpu":
        spin(deadline)
    else:
        grow(deadline, args.max_mib)
    print("runaway: nothing stopped me; ending on my own", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
