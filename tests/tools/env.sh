#!/bin/sh
# Reports its working folder and some environment variables.
cat > /dev/null
printf '{"cwd": "%s", "mode": "%s", "secret": "%s", "has_path": %s}\n' \
  "$(pwd)" "${MODE:-}" "${CODEMODE_TEST_SECRET:-}" "$([ -n "$PATH" ] && echo true || echo false)"
