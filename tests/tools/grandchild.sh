#!/bin/sh
# Starts a grandchild that would sleep for a long time, writes its pid to the file named by
# the `pidfile` argument, and answers at once: the grandchild must not outlive the call.
pidfile=$(sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
sleep 1000 &
echo $! > "$pidfile"
echo '{"started": true}'
