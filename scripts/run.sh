#!/bin/sh
# Usage: sh scripts/run.sh deno|bun ARGS...
# Runs the runtime pinned in package.json (node_modules/.bin) when installed, else the
# one on PATH. deno.json's tasks go through here because `deno task` runs
# node_modules/.bin entries as JavaScript, and these two are native executables.
tool=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$root/node_modules/.bin/$tool" ]; then
  exec "$root/node_modules/.bin/$tool" "$@"
fi
exec "$tool" "$@"
