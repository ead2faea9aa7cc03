package contracts

// Ops of extensions.mcp.resource served by resource subscriptions. The
// other ops (list, templates, read) are the resources work's.
const (
	ResourceOpSubscribe   = "subscribe"
	ResourceOpUnsubscribe = "unsubscribe"
)

// ResourceSubscribeParams is the params of extensions.mcp.resource with op
// subscribe or unsubscribe: the server and the resource URI, passed to that
// server exactly as given (pikod never fetches it).
type ResourceSubscribeParams struct {
	Server string `json:"server"`
	Op     string `json:"op"`
	URI    string `json:"uri"`
}

// ResourceSubscribeResult is the result of extensions.mcp.resource with op
// subscribe or unsubscribe. Subscribed says whether the connection is
// subscribed to URI now; Changed is false when it already was (subscribe)
// or was not (unsubscribe), and nothing was sent. A subscription lasts as
// long as the server's connection: a disconnect ends it.
type ResourceSubscribeResult struct {
	Server     string `json:"server"`
	URI        string `json:"uri"`
	Subscribed bool   `json:"subscribed"`
	Changed    bool   `json:"changed"`
}

// ResourceEventData is the Data of an EventResource event: the server said
// the subscribed resource at URI changed (notifications/resources/updated).
// Title is the title the server gave with the update, or the one its
// catalog lists for URI. Reading the resource again is up to the watcher:
// pikod never reads it by itself.
type ResourceEventData struct {
	URI   string `json:"uri"`
	Title string `json:"title,omitempty"`
}
