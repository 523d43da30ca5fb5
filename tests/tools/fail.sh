#!/bin/sh
# Reads its input, complains on stderr, exits 3.
cat > /dev/null
echo "the widget is broken" >&2
exit 3
