#!/usr/bin/env bash
# What the S3 tests start on loopback (scripts/deps.sh says how the step
# runs): versitygw (Apache-2.0), at stores/s3/s3kit.Version (a test holds
# the two alike), about 75 modules and 590 packages to compile.
set -uo pipefail
. scripts/deps.sh
go_step versitygw github.com/versity/versitygw/cmd/versitygw@v1.8.0 versitygw
