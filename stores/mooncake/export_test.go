package mooncake

// FailStageAlloc makes every stage mapping fail with err until the
// returned restore is called (see allocStage).
func FailStageAlloc(err error) (restore func()) {
	was := allocStage
	allocStage = func(int) ([]byte, error) { return nil, err }
	return func() { allocStage = was }
}
