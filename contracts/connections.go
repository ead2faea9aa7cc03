package contracts

// ServerParams names one configured server; it is the params of
// extensions.mcp.connect, extensions.mcp.disconnect and extensions.mcp.ping.
type ServerParams struct {
	Server string `json:"server"`
}

// ConnectResult is the result of extensions.mcp.connect: the server's
// status once connected. A connection that fails is an error
// (ErrUnavailable, reason connect_failed) and the server stays failed.
type ConnectResult struct {
	Server ServerStatus `json:"server"`
}

// DisconnectResult is the result of extensions.mcp.disconnect.
// WasConnected is false when there was nothing to stop.
type DisconnectResult struct {
	Server       string `json:"server"`
	WasConnected bool   `json:"wasConnected"`
}

// PingResult is the result of extensions.mcp.ping: one round trip to the
// server (ping on legacy connections, server/discover on 2026-07-28 ones).
type PingResult struct {
	Server          string `json:"server"`
	ProtocolVersion string `json:"protocolVersion"`
	RoundTripMs     int64  `json:"roundTripMs"`
}
