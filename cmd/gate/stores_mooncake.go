//go:build mooncake

package main

// Built with -tags mooncake, the gate links the real Mooncake SDK too:
// 'gate --sdk real' runs it (see stores/mooncake/cgosdk/doc.go).
import _ "github.com/kvblob/kvblob/stores/mooncake/cgosdk/realkit"
