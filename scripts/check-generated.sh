#!/usr/bin/env bash
# Fails when gen/ differs from what `buf generate` makes from proto/ (stale generated code).
# gen/package.json is written by hand (it makes gen/ the workspace package @mailroom/proto).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r proto buf.yaml buf.gen.yaml "$tmp/"
ln -s "$PWD/node_modules" "$tmp/node_modules"
(cd "$tmp" && PATH="$PWD/node_modules/.bin:$PATH" npx --no-install buf generate)
if ! diff -r -x package.json "$tmp/gen" gen >/dev/null; then
  echo "gen/ is stale: run 'npm run generate' and commit the result" >&2
  diff -r -x package.json "$tmp/gen" gen | head -20 >&2
  exit 1
fi
echo "gen/ matches proto/"
