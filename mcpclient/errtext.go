package mcpclient

import "strings"

// saidOnce returns msg with each segment (between ": ") that repeats the
// one before it dropped. mcp-go wraps a failed HTTP request as "failed to
// send request: " at two layers, so a refused connection would read
// "failed to send request: failed to send request: Post ...": the owner
// should read what failed once.
func saidOnce(msg string) string {
	parts := strings.Split(msg, ": ")
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		if i > 0 && p == parts[i-1] {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
