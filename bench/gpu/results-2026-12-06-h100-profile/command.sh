#!/usr/bin/env bash
# This run is the first half of device call 37; its script is bench/pq/data/h100host-16cpu-2026-12-06-padded/command.sh.
exec bash bench/pq/data/h100host-16cpu-2026-12-06-padded/command.sh
