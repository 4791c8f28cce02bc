#!/usr/bin/env bash
# One device call (39) made both this folder's serving runs and the checkpoint runs of
# bench/gpu/results-2026-12-06-h100-snapshot-v3: the call's script is kept once, there.
exec bash "$(dirname "$0")/../../gpu/results-2026-12-06-h100-snapshot-v3/command.sh" "$@"
