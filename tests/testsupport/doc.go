// Package testsupport holds the helpers that tests of several packages
// share, so each is written once:
//
//	buffer.go  Buffer: output a process or logger writes while the test
//	           reads it (safe for both at once), with a wait for a substring
//	bus_linux.go PrivateBus: a dbus-daemon of the test's own, with nothing to
//	           activate behind the test's back
//	bigresult.go BigTextResult: a 20 MB tool result of one text block
//
// Unit tests (approvals, mcpclient, rpc, vault) and the end-to-end suites
// in tests import it from their _test files only. It may import the
// standard library only (tests/deps_test.go checks it), so any package may
// use it without a dependency.
package testsupport
