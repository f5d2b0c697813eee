#!/bin/sh
# Probe: can the command connect to a TCP listener on the host's loopback (127.0.0.1 only)?
# Usage: probe.sh ID PORT TOKEN. Sends TOKEN and one newline, waits at most 3 s for a reply.
id=$1 port=$2 token=$3
case $port in
  '' | *[!0-9]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
if command -v python3 >/dev/null 2>&1; then
  reply=$(python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
s.sendall(sys.argv[2].encode() + b"\n")
print(s.recv(16).decode(errors="replace").strip())' "$port" "$token" 2>/dev/null)
elif command -v nc >/dev/null 2>&1; then
  reply=$(printf '%s\n' "$token" | nc -w 3 127.0.0.1 "$port" 2>/dev/null)
elif command -v busybox >/dev/null 2>&1; then
  reply=$(printf '%s\n' "$token" | busybox nc -w 3 127.0.0.1 "$port" 2>/dev/null)
else
  echo "PROBE $id blocked no-tcp-client"
  exit 0
fi
if [ "$reply" = ok ]; then
  echo "PROBE $id reached connected"
else
  echo "PROBE $id blocked connect-failed"
fi
