package btrun

// WarmErr returns the error of the last warm-up (Warm) that ended.
func WarmErr() error {
	warmMu.Lock()
	defer warmMu.Unlock()
	return warmErr
}
