#!/bin/sh
# Probe: can the command see a secret the lab planted in the workbench's own environment?
# Usage: probe.sh ID NAME TOKEN. Looks in its own environment, then in its parent's start-up
# environment (/proc/PPID/environ). Prints where it found the secret, never the secret.
id=$1 name=$2 token=$3
case $name in
  '' | *[!A-Za-z0-9_]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
eval "seen=\${$name-}"
if [ -n "$token" ] && [ "$seen" = "$token" ]; then
  echo "PROBE $id reached own-environment"
  exit 0
fi
if tr '\000' '\n' <"/proc/$PPID/environ" 2>/dev/null | grep -qxF "$name=$token"; then
  echo "PROBE $id reached parent-environment"
  exit 0
fi
echo "PROBE $id blocked not-in-environment"
