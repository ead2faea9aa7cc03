package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pikod/pikod/contracts"
)

// CallTool is a test-only shortcut around Call: it sends tools/call with
// exactly the given arguments, without the catalog lookup, the grant check
// or schema validation, so tests can reach the server directly.
func (s *Supervisor) CallTool(ctx context.Context, id, tool string, arguments json.RawMessage) (json.RawMessage, error) {
	sess, err := s.session(id)
	if err != nil {
		return nil, err
	}
	c, err := sess.connect(ctx)
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{tool, arguments})
	if err != nil {
		return nil, fmt.Errorf("encoding the call: %w", contracts.ErrInvalidArgument)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(sess.settings().Timeout())*time.Millisecond)
	defer cancel()
	res, err := c.raw.request(ctx, string(mcp.MethodToolsCall), params)
	if err != nil {
		return nil, s.requestError(ctx, sess, c, "tools/call "+tool, err)
	}
	return res, nil
}
