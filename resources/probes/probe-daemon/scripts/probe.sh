#!/bin/sh
# Probe: does a background process the command detaches survive the run? Usage: probe.sh ID TOKEN.
# Starts `sh -c 'sleep 20' ... TOKEN` in a new session (setsid), or double-forked when there is
# no setsid, and exits at once. It ends by itself after 20 s; the lab looks for TOKEN in the
# host's process list right after the run.
id=$1 token=$2
case $token in
  '' | *[!A-Za-z0-9-]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c 'sleep 20; exit 0' "$token" </dev/null >/dev/null 2>&1 &
else
  (sh -c 'sleep 20; exit 0' "$token" </dev/null >/dev/null 2>&1 &)
fi
echo "PROBE $id started detached"
