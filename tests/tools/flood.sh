#!/bin/sh
# Prints without end: the call must stop at the stdout limit, not at its timeout.
exec yes "a line of output"
