#!/bin/bash
# Runs LocalStack init hooks (ready.d/*.sh, which call awslocal, and
# ready.d/*.py) against Baton, unchanged: awslocal becomes the AWS CLI
# pointed at BATON_URL, and AWS_ENDPOINT_URL points boto3 there.
# Usage: BATON_URL=http://localhost:4566 ./run-init.sh [DIR]
#
# As LocalStack runs a stage's hooks: .sh and .py files, in alphanumerical
# order, a directory's own files before its subdirectories (each in turn,
# depth first); a hook that fails does not stop the others. Other files are
# named and skipped. The exit status is 1 when a hook failed.
set -uo pipefail
: "${BATON_URL:?set BATON_URL to the server, as http://localhost:4566}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_ENDPOINT_URL="$BATON_URL"
awslocal() { aws --endpoint-url="$BATON_URL" "$@"; }
export -f awslocal

failed=()

run_dir() {
  local dir=$1 entry
  local -a files=() dirs=()
  while IFS= read -r -d '' entry; do
    if [ -d "$entry" ]; then dirs+=("$entry"); else files+=("$entry"); fi
  done < <(find "$dir" -mindepth 1 -maxdepth 1 -print0 | LC_ALL=C sort -z)
  for entry in "${files[@]}"; do
    case "$entry" in
      *.sh) echo "running $entry"; bash "$entry" || failed+=("$entry") ;;
      *.py) echo "running $entry"; python3 "$entry" || failed+=("$entry") ;;
      *) echo "skipping $entry: not a .sh or .py hook" ;;
    esac
  done
  for entry in "${dirs[@]}"; do
    run_dir "$entry"
  done
}

dir="${1:-$(dirname "$0")/ready.d}"
[ -d "$dir" ] || { echo "run-init.sh: $dir is not a directory" >&2; exit 2; }
run_dir "$dir"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'hook failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
