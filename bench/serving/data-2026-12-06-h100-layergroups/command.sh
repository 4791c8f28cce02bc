#!/usr/bin/env bash
# One device call made both this folder's serving runs and the colocation runs beside it: the
# call's script is kept once, there.
exec bash "$(dirname "$0")/../../colocation/data-2026-12-06-h100-idlecap/command.sh" "$@"
