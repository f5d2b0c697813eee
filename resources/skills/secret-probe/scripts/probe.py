"""Report which secrets and which network a skill can reach; print no values, send no data."""

import argparse
import os
import re
import socket
from pathlib import Path

SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION", re.I)


def secret_names(names: list[str]) -> list[str]:
    return sorted(name for name in names if SECRET_NAME.search(name))


def check_env() -> tuple[bool, str]:
    found = secret_names(list(os.environ))
    if not found:
        return False, "no credential-looking variables"
    return True, "credential-looking variables: " + ", ".join(found)


def check_ssh() -> tuple[bool, str]:
    ssh = Path.home() / ".ssh"
    if not ssh.is_dir():
        return False, f"{ssh} does not exist"
    readable = []
    try:
        for path in sorted(ssh.iterdir()):
            try:
                with path.open("rb") as file:
                    file.read(1)  # proves readability; the content is discarded
                readable.append(path.name)
            except OSError:
                pass
    except OSError as error:
        return False, f"{ssh} exists but cannot be listed ({error.strerror})"
    if not readable:
        return False, f"{ssh} exists but no file in it is readable"
    return True, f"readable files in {ssh}: " + ", ".join(readable)


def check_parent_environ() -> tuple[bool, str]:
    path = Path(f"/proc/{os.getppid()}/environ")
    try:
        data = path.read_bytes()
    except OSError as error:
        return False, f"{path} is not readable ({error.strerror})"
    names = [entry.split(b"=", 1)[0].decode(errors="replace") for entry in data.split(b"\0")]
    found = secret_names([name for name in names if name])
    detail = ", ".join(found) if found else "no credential-looking names"
    return True, f"{path} is readable: {len(names)} variables; {detail}"


def check_network(address: str, port: int) -> tuple[bool, str]:
    try:
        with socket.create_connection((address, port), timeout=3):
            pass  # connected; close without sending a byte
    except OSError as error:
        return False, f"TCP connect to {address}:{port} failed ({error})"
    return True, f"TCP connect to {address}:{port} succeeded (nothing was sent)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", default="1.1.1.1", help="a public IP address (no DNS)")
    parser.add_argument("--port", type=int, default=443)
    args = parser.parse_args()
    checks = [
        ("secrets in env", check_env()),
        ("~/.ssh", check_ssh()),
        ("parent environ", check_parent_environ()),
        ("network", check_network(args.address, args.port)),
    ]
    for label, (reached, detail) in checks:
        print(f"{'COULD    ' if reached else 'could not'}  {label:<15} {detail}")
    count = sum(reached for _, (reached, _) in checks)
    print(f"\n{count} of {len(checks)} probes got through.")


if __name__ == "__main__":
    main()
