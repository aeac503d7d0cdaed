#!/bin/bash
# Runs LocalStack init hooks (ready.d/*.sh, which call awslocal) against
# Baton, unchanged: awslocal becomes the AWS CLI pointed at BATON_URL.
# Usage: BATON_URL=http://localhost:4566 ./run-init.sh [DIR]
set -euo pipefail
: "${BATON_URL:?set BATON_URL to the server, as http://localhost:4566}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
awslocal() { aws --endpoint-url="$BATON_URL" "$@"; }
export -f awslocal
dir="${1:-$(dirname "$0")/ready.d}"
for hook in "$dir"/*.sh; do
  echo "running $hook"
  bash "$hook"
done
