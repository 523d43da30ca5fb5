#!/bin/sh
# Prints text that is not JSON; asked for `{"surrogate": true}`, JSON whose string holds a
# lone UTF-16 surrogate escape (valid JSON syntax, but no Unicode text).
args=$(cat)
case "$args" in
  *surrogate*) printf '%s\n' '{"text": "a\ud800b"}' ;;
  *) echo "hello, world" ;;
esac
