#!/bin/sh
# Writes its pid to the file named by the `pidfile` argument, then sleeps for a long time.
pidfile=$(sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
echo $$ > "$pidfile"
sleep 1000
