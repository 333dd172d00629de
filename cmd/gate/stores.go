package main

// The stores the gate runs. Each registers itself from its own test kit
// (see conformance/gate); a new store adds one line here.
import (
	_ "github.com/kvblob/kvblob/stores/fs/fskit"
	_ "github.com/kvblob/kvblob/stores/memory/memtest"
	_ "github.com/kvblob/kvblob/stores/mooncake/mctest"
	_ "github.com/kvblob/kvblob/stores/redis/redistest"
	_ "github.com/kvblob/kvblob/stores/s3/s3kit"
)
