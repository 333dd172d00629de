#!/usr/bin/env bash
# What the Redis tests and the demo start on loopback (scripts/deps.sh
# says how each step runs): Debian's redis-server 7, and Valkey 8.1, which
# Debian 12 lacks: scripts/fetch-valkey.sh puts Debian 13's in
# .bin/valkey-8.1 without installing anything (stores/redis/rediskit looks
# there; KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI name one of your own).
set -uo pipefail
. scripts/deps.sh
apt_step redis-server redis-server redis-server || exit
fetch_step valkey-8.1 .bin/valkey-8.1/.complete "Debian trixie's Valkey 8.1 into .bin/valkey-8.1, installing nothing (about 20 s)" \
  scripts/fetch-valkey.sh .bin/valkey-8.1
