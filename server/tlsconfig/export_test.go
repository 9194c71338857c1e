package tlsconfig

// SetReloadedHook sets the function Watch calls after each reload, until
// the test ends.
func SetReloadedHook(cleanup func(func()), f func()) {
	testHookReloaded = f
	cleanup(func() { testHookReloaded = nil })
}
