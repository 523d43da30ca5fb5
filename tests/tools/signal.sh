#!/bin/sh
# Dies by SIGSEGV.
cat > /dev/null
kill -SEGV $$
