#!/bin/sh
# Probe: could a name lookup (or any packet) leave the machine? Sends nothing: it looks for a
# route off the machine (a default route in /proc/net/route or /proc/net/ipv6_route, other than
# on the loopback) and a configured nameserver. Usage: probe.sh ID.
id=$1
route=
if [ -r /proc/net/route ]; then
  while read -r iface dest _; do
    if [ "$dest" = 00000000 ] && [ "$iface" != lo ]; then route=$iface; fi
  done </proc/net/route
fi
if [ -z "$route" ] && [ -r /proc/net/ipv6_route ]; then
  while read -r dest plen _ _ _ _ _ _ _ iface; do
    if [ "$dest$plen" = 0000000000000000000000000000000000 ] && [ "$iface" != lo ]; then route=$iface; fi
  done </proc/net/ipv6_route
fi
nameserver=no
if grep -q '^nameserver' /etc/resolv.conf 2>/dev/null; then nameserver=yes; fi
if [ -n "$route" ]; then
  echo "PROBE $id reached default-route-$route-nameserver-$nameserver"
else
  echo "PROBE $id blocked no-route-off-machine"
fi
