package s3_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// gw is the package's versitygw on loopback, started before the tests;
// a test takes it with Need, which skips the test when versitygw is not
// installed and fails it under CI=true (make deps installs it).
var gw = storekit.Own(s3kit.Available, s3kit.Setup, (*s3kit.Env).Close)

func TestMain(m *testing.M) { storekit.MainOwning(m, gw) }
