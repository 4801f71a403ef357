package btrun

// WaitWarm waits for Warm's background registration and returns its error.
func WaitWarm() error {
	<-warmDone
	return warmErr
}
