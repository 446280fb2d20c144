#!/bin/sh
# The firewall of a swarm node that runs learners' servers (make hub with
# HUB_SPAWNER=swarm): a connection a learner's container opens (from the engine's bridge)
# may go to the hub's API and the grading service only, never to the node itself, another
# learner's container (on this node or another: their published ports), or anything else
# the node reaches. Replies to connections the hub's proxy opened pass. Run as root on each
# node once its engine has started (it made the DOCKER-USER chain); again is harmless.
#   deploy/image/node_rules.sh BRIDGE HUB_IP PORT...   e.g. docker0 10.0.0.5 8081 810
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BRIDGE HUB_IP PORT..." >&2; exit 2; }
bridge=$1 hub=$2
shift 2
chain=COURSE-LEARNERS
iptables -w -N "$chain" 2>/dev/null || iptables -w -F "$chain"
iptables -w -A "$chain" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
for port in "$@"; do
  iptables -w -A "$chain" -d "$hub" -p tcp --dport "$port" -m conntrack --ctstate NEW -j RETURN
done
iptables -w -A "$chain" -j REJECT --reject-with icmp-port-unreachable
# through the node (DOCKER-USER comes first in FORWARD), and to the node itself
for hook in DOCKER-USER INPUT; do
  iptables -w -C "$hook" -i "$bridge" -j "$chain" 2>/dev/null ||
    iptables -w -I "$hook" 1 -i "$bridge" -j "$chain"
done
