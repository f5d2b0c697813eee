#!/bin/sh
# Probe: does a background process the command detaches survive the run? Usage: probe.sh ID TOKEN.
# Starts two `sh -c 'sleep 20' ... TOKEN`: one in a new session (setsid), or double-forked when
# there is no setsid; one with an empty environment as well (`env -i`, so no tag a posture put
# in the environment finds it), then exits. They end by themselves after 20 s; the lab looks
# for TOKEN in their command lines in the host's process list right after the run. The probe
# waits half a second before it exits, so the escapes have happened by then.
id=$1 token=$2
case $token in
  '' | *[!A-Za-z0-9-]*) echo "PROBE $id blocked bad-arguments"; exit 2 ;;
esac
daemon='sleep 20; exit 0'
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c "$daemon" "$token" </dev/null >/dev/null 2>&1 &
  setsid env -i /bin/sh -c "$daemon" "$token" </dev/null >/dev/null 2>&1 &
else
  (sh -c "$daemon" "$token" </dev/null >/dev/null 2>&1 &)
  (env -i /bin/sh -c "$daemon" "$token" </dev/null >/dev/null 2>&1 &)
fi
sleep 0.5 # let them exec first: a posture must not find them only because env -i had not run yet
echo "PROBE $id started detached"
