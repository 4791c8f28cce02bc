package checkpoint

// SyncBuffer lets the external tests (package checkpoint_test) collect the logs of several
// goroutines with the same sink as the internal ones.
type SyncBuffer = syncBuffer
