#!/usr/bin/env bash
# Runs a command and prints the resident set (VmRSS, kB) of each process named pagoda it started,
# as last sampled (every 0.2 s) before it exited: the memory each mpirun rank holds while it
# serves, which /usr/bin/time's peak does not show (opening a model pages in all of it first).
#
#   tests/bench/rss_watch.sh mpirun -np 2 ./build/bin/pagoda generate --model M --device cpu:0 --axes ep=2 ...
set -u
"$@" >/dev/null 2>&1 &
declare -A last
while kill -0 $! 2>/dev/null; do
  for pid in $(pgrep -x pagoda); do
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/"$pid"/status 2>/dev/null)
    [[ -n $rss ]] && last[$pid]=$rss
  done
  sleep 0.2
done
for pid in "${!last[@]}"; do echo "pid $pid rss_kb ${last[$pid]}"; done
