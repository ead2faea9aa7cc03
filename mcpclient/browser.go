package mcpclient

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pikod/pikod/contracts"
)

// browserCloseTimeout bounds the graceful close of a browser before its
// server is stopped.
const browserCloseTimeout = 5 * time.Second

// closeBrowser asks a browser server (settings "browser" with a preset
// that has a close tool) to close its browser before the process group is
// stopped: playwright-mcp, stopped by closing its stdin, kills Chromium
// before the profile's cookies are written. It is pikod's own lifecycle
// request, not a caller's call: it is logged, not receipted, and its
// outcome never keeps the stop from going ahead.
func (c *conn) closeBrowser() {
	cfg := c.s.settings()
	if cfg == nil || cfg.Browser == nil || c.proc == nil || c.client == nil || !c.live.Load() {
		return
	}
	preset, ok := contracts.FindBrowserPreset(cfg.Browser.Preset)
	if !ok || preset.CloseTool == "" {
		return
	}
	select {
	case <-c.proc.Done():
		return
	default:
	}
	var args map[string]any
	if preset.CloseArgs != "" {
		_ = json.Unmarshal([]byte(preset.CloseArgs), &args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserCloseTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = preset.CloseTool
	req.Params.Arguments = args
	start := time.Now()
	if _, err := c.client.CallTool(ctx, req); err != nil {
		c.s.log.Warn().Str("tool", preset.CloseTool).Str("error", c.s.sup.clean(err.Error(), 300)).Msg("closing the browser before stop failed; stopping it anyway")
		return
	}
	c.s.log.Info().Str("tool", preset.CloseTool).Dur("took", time.Since(start)).Msg("browser closed before stop")
}
