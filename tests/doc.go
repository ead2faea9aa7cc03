// Package tests holds the end-to-end suites: they build pikod and pikoctl,
// start a real daemon on a temporary instance and drive it over the real
// socket.
//
// Tests may import contracts and rpc (the client side), bbolt to inspect a
// stopped daemon's file, and mcp-go for fixture servers; never daemon,
// mcpclient, vault or approvals, so they test the product as users see it.
package tests
