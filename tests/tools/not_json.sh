#!/bin/sh
# Prints text that is not JSON.
cat > /dev/null
echo "hello, world"
