"""Leave a detached `sleep` behind (double fork + setsid), then exit 0 (stdlib only)."""

import argparse
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=300, help="how long the sleeper lives")
    args = parser.parse_args()
    read_end, write_end = os.pipe()
    if os.fork() == 0:  # first child: leave the session, fork the sleeper, exit
        os.close(read_end)
        os.setsid()
        pid = os.fork()
        if pid == 0:  # grandchild: become the sleeper, detached from our output
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.execvp("sleep", ["sleep", str(args.seconds)])
        os.write(write_end, str(pid).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        sleeper = int(pipe.read())
    os.wait()  # reap the first child; the sleeper is now an orphan in its own session
    Path("orphan.pid").write_text(f"{sleeper}\n")
    print(f"left sleeper PID {sleeper} behind (setsid, {args.seconds} s); exiting 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
