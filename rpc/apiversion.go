package rpc

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pikod/pikod/contracts"
)

// APIAdvice says what to upgrade when the daemon that answered
// system.hello speaks another API than this client (contracts.APIVersion);
// it is "" when both speak the same. Every client of the socket words a
// mismatch with it: pikoctl's version, doctor and service commands, and
// the check a Client makes on its own connection (see checkAPI).
func APIAdvice(h contracts.HelloResult) string {
	if h.APIVersion == contracts.APIVersion {
		return ""
	}
	daemon := fmt.Sprintf("pikod %s speaks API %s, this client API %s",
		contracts.SafeText(h.DaemonVersion, contracts.OneLine, 64), contracts.SafeText(h.APIVersion, contracts.OneLine, 16), contracts.APIVersion)
	theirs, err1 := strconv.Atoi(h.APIVersion)
	ours, err2 := strconv.Atoi(contracts.APIVersion)
	switch {
	case err1 != nil || err2 != nil:
		return daemon + ": install pikod and pikoctl of the same release"
	case theirs < ours:
		return daemon + ": upgrade pikod to this pikoctl's release and restart it"
	}
	return daemon + ": upgrade pikoctl to pikod's release"
}

// checkAPI is called with the daemon's refusal of a request as an unknown
// method or as params it cannot decode, the signs of a daemon of another
// release. It asks system.hello once per connection and, when the API
// versions differ, returns the refusal with APIAdvice as its hint (before
// any hint the daemon gave). Other answers cost no extra request.
func (c *Client) checkAPI(ctx context.Context, method string, we *contracts.Error) *contracts.Error {
	if method == contracts.MethodHello || (we.Code != contracts.CodeMethodNotFound && we.Code != contracts.CodeInvalidParams) {
		return we
	}
	c.apiOnce.Do(func() {
		var h contracts.HelloResult
		if c.call(ctx, 0, contracts.MethodHello, contracts.HelloParams{APIVersion: contracts.APIVersion}, &h) == nil {
			c.apiAdvice = APIAdvice(h)
		}
	})
	if c.apiAdvice == "" {
		return we
	}
	out := *we
	data := contracts.ErrorData{}
	if we.Data != nil {
		data = *we.Data
	}
	data.Hint = c.apiAdvice + joinHint(data.Hint)
	out.Data = &data
	return &out
}

func joinHint(h string) string {
	if h == "" {
		return ""
	}
	return "; " + h
}
