package btrun

// WarmErr returns the error of the last warm-up (Warm) that ended.
func WarmErr() error {
	warmMu.Lock()
	defer warmMu.Unlock()
	return warmErr
}

// CloseWaits returns how many of Run's reads while the links closed
// returned no record.
func (r *Runner) CloseWaits() int { return r.closeWaits }
